//! The smallest HTTP/1.1 server that Prometheus can scrape, safe to leave running:
//! `GET /metrics` and `GET /healthz` and nothing else; binds 127.0.0.1 unless an address
//! says otherwise. Each connection gets a thread of its own, at most MAX_CONNS at once
//! (one more is closed at once with a 503); a request head larger than MAX_HEAD is
//! refused (431); a client has HEAD_DEADLINE to send its request and IO_TIMEOUT per
//! write to take the answer, so a client that never sends or never reads holds one slot
//! for a few seconds and never the collector: the answer is text rendered before the
//! request came (see `Exporter`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use super::Exporter;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Connections served at once. Prometheus keeps one per target; a few more leave room
/// for a person with curl and a second Prometheus.
pub const MAX_CONNS: usize = 8;
/// Bytes of request line and headers accepted (Prometheus sends about 300).
pub const MAX_HEAD: usize = 8192;
/// Time a client has to send its whole request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Time one write of the answer may block on a client that does not read.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Server {
    listener: TcpListener,
    exporter: Exporter,
    /// The collector's interval: /healthz fails when no frame came for several.
    interval: Duration,
    busy: Arc<AtomicUsize>,
}

/// "9464" and ":9464" mean 127.0.0.1:9464; "localhost:P" is 127.0.0.1:P; anything else
/// is a numeric IP:PORT (`[::1]:9464` for IPv6). No name lookup: the static build links
/// glibc statically, where getaddrinfo would need NSS modules at run time.
pub fn resolve(addr: &str) -> Result<SocketAddr> {
    let a = addr.trim();
    let full = match a.strip_prefix(':').or_else(|| a.strip_prefix("localhost:")) {
        Some(port) => format!("127.0.0.1:{port}"),
        None if a.parse::<u16>().is_ok() => format!("127.0.0.1:{a}"),
        None => a.to_string(),
    };
    full.parse::<SocketAddr>().map_err(|_| {
        anyhow!(
            "'{addr}' is not an address to listen on (examples: 9464, 127.0.0.1:9464, 0.0.0.0:9464, [::1]:9464)"
        )
    })
}

impl Server {
    pub fn bind(addr: &str, exporter: Exporter, interval: Duration) -> Result<Server> {
        let sa = resolve(addr)?;
        let listener = TcpListener::bind(sa).with_context(|| format!("cannot listen on {sa}"))?;
        Ok(Server {
            listener,
            exporter,
            interval,
            busy: Arc::default(),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound socket has an address")
    }

    /// Serve for the rest of the process's life. The thread sleeps in `accept` (no
    /// polling: an idle exporter costs nothing between scrapes) and ends with the
    /// process.
    pub fn spawn(self) -> JoinHandle<()> {
        let me = Arc::new(self);
        std::thread::Builder::new()
            .name("ttop-http".into())
            .spawn(move || {
                for conn in me.listener.incoming() {
                    match conn {
                        Ok(conn) => me.clone().dispatch(conn),
                        // Out of descriptors and the like: do not spin on it.
                        Err(_) => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
            })
            .expect("spawning a thread")
    }

    fn dispatch(self: Arc<Self>, conn: TcpStream) {
        if self.busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            // Never block the accept loop on this client: one non-blocking try.
            let _ = conn.set_nonblocking(true);
            let _ = (&conn).write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ttop-http-conn".into())
            .spawn(move || {
                let _ = me.answer(conn);
                me.busy.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The request head, read until its blank line within MAX_HEAD bytes and
    /// HEAD_DEADLINE; None when it is too large.
    fn read_head(conn: &mut TcpStream) -> std::io::Result<Option<String>> {
        let t0 = Instant::now();
        let mut buf = Vec::with_capacity(512);
        let mut chunk = [0u8; 1024];
        loop {
            let left = HEAD_DEADLINE.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            conn.set_read_timeout(Some(left))?;
            let n = conn.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                buf.truncate(end);
                return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
            }
            if buf.len() > MAX_HEAD {
                return Ok(None);
            }
        }
    }

    fn answer(&self, mut conn: TcpStream) -> std::io::Result<()> {
        conn.set_write_timeout(Some(IO_TIMEOUT))?;
        let head = Self::read_head(&mut conn)?;
        let line = head.as_deref().unwrap_or("").lines().next().unwrap_or("");
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        let text = |s: &'static str| s.as_bytes().to_vec();
        let (status, ctype, body) = match (head.is_some(), method, path) {
            (false, _, _) => (
                "431 Request Header Fields Too Large",
                "text/plain",
                text("request head over 8 KiB\n"),
            ),
            (_, "GET" | "HEAD", "/metrics") => match self.exporter.current() {
                Some(t) => ("200 OK", CONTENT_TYPE, t.as_bytes().to_vec()),
                None => (
                    "503 Service Unavailable",
                    "text/plain",
                    text("no frame yet: the first one comes after one interval\n"),
                ),
            },
            (_, "GET" | "HEAD", "/healthz") => {
                // Healthy while frames keep coming: none for three intervals (and at
                // least 5 s) means the collector is stuck.
                let limit = (self.interval * 3).max(Duration::from_secs(5));
                match self.exporter.latest() {
                    Some((_, at)) if at.elapsed() <= limit => {
                        ("200 OK", "text/plain", text("ok\n"))
                    }
                    Some(_) => (
                        "503 Service Unavailable",
                        "text/plain",
                        text("stale: no frame for three intervals\n"),
                    ),
                    None => (
                        "503 Service Unavailable",
                        "text/plain",
                        text("starting: no frame yet\n"),
                    ),
                }
            }
            (_, "GET" | "HEAD", _) => ("404 Not Found", "text/plain", text("not found\n")),
            _ => ("405 Method Not Allowed", "text/plain", text("GET only\n")),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        conn.write_all(head.as_bytes())?;
        if method != "HEAD" {
            conn.write_all(&body)?;
        }
        conn.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(resolve("9464").unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(resolve(":9100").unwrap().to_string(), "127.0.0.1:9100");
        assert_eq!(resolve("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        assert_eq!(resolve("localhost:80").unwrap().to_string(), "127.0.0.1:80");
        assert_eq!(resolve("[::1]:80").unwrap().to_string(), "[::1]:80");
        for bad in [
            "",
            "nonsense",
            "1.2.3.4:99999",
            "127.0.0.1",
            "example.com:80",
        ] {
            assert!(resolve(bad).is_err(), "{bad} accepted");
        }
    }
}
