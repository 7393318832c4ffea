//! The incident fixture's scheduling-latency figures (see fixtures.rs).

use super::sample::Sample;

/// The scheduling-latency figures of `incident` (`secs` seconds in, cumulative), every
/// row's differing from the others': each CPU and thread waits a different number of
/// times a second, and its worst wait of the interval ends at a different moment (so a
/// swapped or mis-keyed column shows in a snapshot).
pub fn latency_into(s: &mut Sample, secs: u64) {
    use super::latency::{LatencySample, stats_of};
    // (count a second, typical wait, worst wait, ms before the sample the worst ended)
    let stats = |id: u32, tgid: u32, (n, scale, worst, ago): (u64, u64, u64, u64)| {
        let one: Vec<u64> = (0..n)
            .map(|i| scale * (1 + i % 40))
            .chain([worst])
            .collect();
        let all: Vec<u64> = (0..secs).flat_map(|_| one.iter().copied()).collect();
        stats_of(id, tgid, &all, s.mono_ns.saturating_sub(ago * 1_000_000))
    };
    let cpus = [
        (300, 5_000, 4_000_000, 300),
        (262, 7_000, 4_500_000, 120),
        (231, 9_000, 5_000_000, 870),
        (97, 11_000, 5_500_000, 45),
    ]
    .into_iter()
    .zip(0u32..)
    .map(|(f, cpu)| stats(cpu, 0, f))
    .collect();
    let mut threads = vec![stats(4242, 4242, (120, 20_000, 48_000_000, 610))];
    for i in 1..6u32 {
        let k = u64::from(i);
        threads.push(stats(
            4242 + 1000 + i,
            4242,
            (
                200 - 17 * k,
                10_000 + 3_000 * k,
                9_000_000 - 1_000_000 * k,
                50 + 130 * k,
            ),
        ));
    }
    threads.push(stats(1817, 1817, (30, 4_000, 1_200_000, 940)));
    threads.push(stats(912, 912, (10, 2_000, 300_000, 5)));
    if let Some(b) = s.bpf.as_mut() {
        b.latency = LatencySample { cpus, threads };
    }
}
