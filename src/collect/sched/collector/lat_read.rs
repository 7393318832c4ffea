//! Reading the scheduler object's latency maps: per-thread histograms (lat_threads,
//! and the one latency a thread_stats entry may hold) and the per-CPU ones, with each
//! max kept only in the interval it belongs to.

use super::*;

impl SchedCollector {
    /// The latency histograms; a max belongs to this interval only if its generation
    /// is the current tick's. `lat1`: threads whose thread_stats held their only
    /// latency; a lat_threads entry for one of them is newer (it has that one too).
    pub(super) fn read_latency(
        &self,
        tick_gen: u64,
        lat1: Vec<LatStats>,
        walk: &mut map_read::Tracked,
        inserts: Option<u64>,
        exits: Vec<types::lat_exit>,
    ) -> LatencySample {
        let conv = |id: u32, s: &types::lat_stats| LatStats {
            id,
            tgid: s.tgid,
            exited: s.exited != 0,
            count: s.count,
            sum_ns: s.sum_ns,
            max_ns: if s.max_gen == tick_gen { s.max_ns } else { 0 },
            max_ts: if s.max_gen == tick_gen { s.max_ts } else { 0 },
            slots: s
                .slots
                .iter()
                .enumerate()
                .filter(|(_, n)| **n != 0)
                .map(|(i, n)| (i as u16, *n))
                .collect(),
            comm: if s.exited != 0 {
                c_str(&s.comm.map(|c| c as u8))
            } else {
                String::new()
            },
        };
        let maps = &self.skel.maps;
        let mut out = LatencySample::default();
        for cpu in 0..self.ncpus {
            if let Ok(Some(v)) = maps.lat_cpu.lookup(&cpu.to_ne_bytes(), MapFlags::ANY) {
                out.cpus.push(conv(cpu, &from_bytes(&v)));
            }
        }
        // Threads that exited since the last read: their one latency (the thread_stats
        // entry that held it is gone) or the name of their lat_threads entry.
        let mut done: Vec<u8> = Vec::new();
        let exited_one: Vec<LatStats> = exits
            .into_iter()
            .map(|e| LatStats {
                exited: true,
                comm: c_str(&e.comm.map(|c| c as u8)),
                ..one_latency(e.tid, e.tgid, [e.lat1_ns, e.lat1_ts, e.lat1_gen], tick_gen)
            })
            .collect();
        walk.for_each(&maps.lat_threads, inserts, |k, v| {
            let s = conv(key_u32(k), &from_bytes(v));
            if s.exited {
                // Its last counts are in this Sample: the entry can go.
                done.extend_from_slice(k);
            }
            out.threads.push(s);
        });
        map_read::delete_all(&maps.lat_threads, &done);
        // A thread's entry in lat_threads has all its latencies; the others' one latency
        // is in its exit record or, while it lives, its thread_stats entry.
        let mut have: foldhash::HashSet<u32> = out.threads.iter().map(|s| s.id).collect();
        for s in exited_one.into_iter().chain(lat1) {
            if have.insert(s.id) {
                out.threads.push(s);
            }
        }
        out
    }
}

/// A thread's histogram holding its one latency `[ns, ktime it got the CPU, tick
/// generation]` (thread_stats.lat1_*): its max belongs to the interval of `tick_gen` only.
pub(super) fn one_latency(
    tid: u32,
    tgid: u32,
    [ns, ts, generation]: [u64; 3],
    tick_gen: u64,
) -> LatStats {
    let this_tick = generation == tick_gen;
    LatStats {
        id: tid,
        tgid,
        count: 1,
        sum_ns: ns,
        max_ns: if this_tick { ns } else { 0 },
        max_ts: if this_tick { ts } else { 0 },
        slots: vec![(latency::slot_of(ns) as u16, 1)],
        ..Default::default()
    }
}
