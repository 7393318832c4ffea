//! The smallest HTTP/1.1 server that Prometheus can scrape: `GET /metrics` and nothing
//! else, one connection at a time, each bounded by timeouts so a stuck client cannot hold
//! it. Binds 127.0.0.1 unless an address says otherwise.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::Exporter;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const IO_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Server {
    listener: TcpListener,
    exporter: Exporter,
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
    pub fn bind(addr: &str, exporter: Exporter) -> Result<Server> {
        let sa = resolve(addr)?;
        let listener = TcpListener::bind(sa).with_context(|| format!("cannot listen on {sa}"))?;
        Ok(Server { listener, exporter })
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
        std::thread::Builder::new()
            .name("ttop-http".into())
            .spawn(move || {
                for conn in self.listener.incoming() {
                    match conn {
                        Ok(conn) => {
                            let _ = self.answer(conn);
                        }
                        // Out of descriptors and the like: do not spin on it.
                        Err(_) => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
            })
            .expect("spawning a thread")
    }

    fn answer(&self, conn: TcpStream) -> std::io::Result<()> {
        conn.set_read_timeout(Some(IO_TIMEOUT))?;
        conn.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut line = String::new();
        reader.by_ref().take(8192).read_line(&mut line)?;
        // Read the rest of the request head so the client sees an orderly close.
        let mut h = String::new();
        while reader.by_ref().take(8192).read_line(&mut h)? > 2 {
            h.clear();
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        let (status, ctype, body) = match (method, path) {
            ("GET" | "HEAD", "/metrics") => match self.exporter.current() {
                Some(text) => ("200 OK", CONTENT_TYPE, text.as_bytes().to_vec()),
                None => (
                    "503 Service Unavailable",
                    "text/plain",
                    b"no frame yet: the first one comes after one interval\n".to_vec(),
                ),
            },
            ("GET" | "HEAD", "/") => (
                "200 OK",
                "text/plain",
                b"ttop: metrics at /metrics\n".to_vec(),
            ),
            ("GET" | "HEAD", _) => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
            _ => (
                "405 Method Not Allowed",
                "text/plain",
                b"GET only\n".to_vec(),
            ),
        };
        let mut out = conn;
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        out.write_all(head.as_bytes())?;
        if method != "HEAD" {
            out.write_all(&body)?;
        }
        out.flush()
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
