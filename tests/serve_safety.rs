//! `ttop serve` is safe to leave running (issue 35 item 6): clients that hold every
//! connection slot without sending a request, or send one and never read the answer,
//! get cut off by the server's deadlines; meanwhile one more client gets a quick 503,
//! the collector keeps producing frames, and once the slots are free a scrape answers
//! with a frame as new as the clock says it must be. Oversized requests get 431; only
//! /metrics and /healthz answer.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::FromRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The server's limits (src/serve/http.rs): 8 connections, 8 KiB heads, 5 s to send a
/// head, 5 s per blocked write.
const MAX_CONNS: usize = 8;
const DEADLINE: Duration = Duration::from_secs(5);
const INTERVAL_S: f64 = 0.2;

/// One request on a fresh connection; the whole answer.
fn get(port: u16, head: &str) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn seq(answer: &str) -> u64 {
    answer
        .lines()
        .find_map(|l| l.strip_prefix("ttop_frame_seq "))
        .unwrap_or_else(|| panic!("no ttop_frame_seq in {answer:.300}"))
        .parse::<f64>()
        .unwrap() as u64
}

/// A connection whose receive buffer is as small as the kernel allows, so an answer it
/// never reads fills it and the server's write blocks.
fn tiny_reader(port: u16) -> TcpStream {
    // SAFETY: a new socket, options and connect on it, then owned by the TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let small: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        );
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let r = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        );
        assert_eq!(r, 0, "connect");
        TcpStream::from_raw_fd(fd)
    }
}

#[test]
fn stuck_clients_are_cut_off_and_never_stall_the_collector() {
    let port = free_port();
    let child = Command::new(ttop_bin())
        .args([
            "serve",
            "--no-bpf",
            "-d",
            &INTERVAL_S.to_string(),
            "--listen",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let t0 = Instant::now();
    let mut first = String::new();
    while !first.starts_with("HTTP/1.1 200") && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        first = get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    assert!(first.starts_with("HTTP/1.1 200"), "{first:.200}");

    // Only the two routes; a head over 8 KiB is refused.
    let health = get(port, "GET /healthz HTTP/1.1\r\n\r\n");
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"),
        "{health}"
    );
    assert!(get(port, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    assert!(get(port, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let big = get(port, &huge);
    assert!(big.starts_with("HTTP/1.1 431"), "{big:.200}");

    // Fill every slot with clients that never send a request, then add as many that
    // send one and never read (whether their answer fits in the socket buffers or the
    // write blocks, they must not hold anything else up).
    let seq0 = seq(&get(port, "GET /metrics HTTP/1.1\r\n\r\n"));
    let held_at = Instant::now();
    let mut held: Vec<TcpStream> = (0..MAX_CONNS).map(|_| tiny_reader(port)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut readers: Vec<TcpStream> = Vec::new();
    for _ in 0..MAX_CONNS {
        let mut c = tiny_reader(port);
        c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        readers.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    // One more is told so at once rather than left hanging.
    let t = Instant::now();
    let busy = get(port, "GET /metrics HTTP/1.1\r\n\r\n");
    let busy_took = t.elapsed();
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:.200}");
    assert!(busy_took < Duration::from_secs(1), "503 took {busy_took:?}");

    // The silent ones are closed at the head deadline.
    for (i, c) in held.iter_mut().enumerate() {
        c.set_read_timeout(Some(DEADLINE * 2)).unwrap();
        let mut b = [0u8; 16];
        let n = c.read(&mut b).unwrap_or(usize::MAX);
        assert_eq!(n, 0, "idle client {i} not closed");
    }
    // Once the writes to the non-readers time out, a scrape answers again, with a
    // frame that the collector made while the slots were held.
    let t = Instant::now();
    let mut again = String::new();
    while !again.starts_with("HTTP/1.1 200") && t.elapsed() < DEADLINE * 2 {
        std::thread::sleep(Duration::from_millis(200));
        again = get(port, "GET /metrics HTTP/1.1\r\n\r\n");
    }
    let elapsed = held_at.elapsed().as_secs_f64();
    assert!(
        again.starts_with("HTTP/1.1 200"),
        "no answer {:?} after the slots were held: {again:.200}",
        t.elapsed()
    );
    let frames = seq(&again) - seq0;
    eprintln!(
        "slots held {elapsed:.1} s; 503 in {busy_took:?}; collector made {frames} frames meanwhile ({:.1} expected at {INTERVAL_S} s)",
        elapsed / INTERVAL_S
    );
    // Frames kept coming at (at least half) the interval: nothing waited on a client.
    assert!(
        frames as f64 >= 0.5 * elapsed / INTERVAL_S,
        "{frames} frames in {elapsed:.1} s at -d {INTERVAL_S}"
    );
    drop((held, readers));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    assert!(wait_timeout(&mut child.0, Duration::from_secs(10)));
}
