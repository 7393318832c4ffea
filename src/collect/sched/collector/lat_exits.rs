//! The exited threads' one latency (bpf/sched_latency.h `lat_exits`): a ring buffer the
//! collector drains at each tick.

use std::sync::{Arc, Mutex};

use libbpf_rs::{MapCore, RingBuffer, RingBufferBuilder};

use crate::collect::bpf::common::from_bytes;

use super::types::lat_exit;

pub struct LatExits {
    ring: RingBuffer<'static>,
    queue: Arc<Mutex<Vec<lat_exit>>>,
}

// SAFETY: the ring buffer (an epoll descriptor and its mappings) has no tie to the thread
// that made it; the collector that owns it is moved to its own thread once and used only
// there. Its callback holds an Arc<Mutex<_>>, which is Send.
unsafe impl Send for LatExits {}

impl LatExits {
    pub fn new(map: &dyn MapCore) -> Result<Self, String> {
        let queue: Arc<Mutex<Vec<lat_exit>>> = Arc::default();
        let q = queue.clone();
        let mut b = RingBufferBuilder::new();
        b.add(map, move |data: &[u8]| {
            if let Ok(mut q) = q.lock() {
                q.push(from_bytes(data));
            }
            0
        })
        .map_err(|e| format!("lat_exits ring buffer: {e}"))?;
        let ring = b
            .build()
            .map_err(|e| format!("lat_exits ring buffer: {e}"))?;
        Ok(Self { ring, queue })
    }

    /// Every record written so far.
    pub fn drain(&self) -> Vec<lat_exit> {
        let _ = self.ring.consume();
        self.queue
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default()
    }
}
