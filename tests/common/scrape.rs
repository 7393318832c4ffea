//! A `ttop serve` read the way Prometheus reads it, without a client: start it on a free
//! port, `GET /metrics` over a plain socket, pick a sample's value, and wait until the
//! counters cover a moment the test knows about.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// `/metrics` of a `ttop serve` on 127.0.0.1:`port` (None until it answers).
pub fn scrape(port: u16) -> Option<String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    c.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// The value of the sample `series` (a metric name, with its labels if it has any).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    let p = format!("{series} ");
    text.lines()
        .find(|l| l.starts_with(&p))?
        .rsplit(' ')
        .next()?
        .parse()
        .ok()
}

/// `ttop serve ARGS` on a free port, once it answers /metrics (it has counted one
/// interval); killed when dropped.
pub fn serve(args: &[&str]) -> (KillOnDrop, u16) {
    let port = free_port();
    let child = Command::new(ttop_bin())
        .arg("serve")
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn ttop serve");
    let k = KillOnDrop(child);
    let t0 = Instant::now();
    while scrape(port).is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "ttop serve answered nothing"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (k, port)
}

/// The scrape once the server has counted two more intervals than at the call: what
/// happened before the call is in it whole.
pub fn settled_scrape(port: u16) -> String {
    let frames = |t: &str| metric(t, "ttop_frames_total").expect("ttop_frames_total");
    let f0 = frames(&scrape(port).expect("scrape"));
    let t0 = Instant::now();
    loop {
        let t = scrape(port).expect("scrape");
        if frames(&t) >= f0 + 2.0 {
            return t;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "serve stopped counting"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
