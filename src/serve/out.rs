//! A registry being filled for one scrape: gauges and counters given their values as
//! they are registered. A family whose every row is None is left out (not measured is
//! not 0).

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

pub type G = Gauge<f64, AtomicU64>;
pub type C = Counter<f64, AtomicU64>;
pub type Labels = Vec<(String, String)>;

pub struct Out {
    pub reg: Registry,
}

pub fn l(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

impl Default for Out {
    fn default() -> Out {
        Out::new()
    }
}

impl Out {
    pub fn new() -> Out {
        Out {
            reg: Registry::with_prefix("ttop"),
        }
    }

    pub fn one(&mut self, name: &str, help: &str, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            let g = G::default();
            g.set(v);
            self.reg.register(name, help, g);
        }
    }

    /// A labelled gauge; rows whose value is None are left out.
    pub fn family(
        &mut self,
        name: &str,
        help: &str,
        rows: impl IntoIterator<Item = (Labels, Option<f64>)>,
    ) {
        let fam = Family::<Labels, G>::default();
        let mut any = false;
        for (labels, v) in rows {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                fam.get_or_create(&labels).set(v);
                any = true;
            }
        }
        if any {
            self.reg.register(name, help, fam);
        }
    }

    /// A counter family `ttop_NAME[_UNIT]_total`; rows whose value is None are left
    /// out, and the family too when all are.
    pub fn counters(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        rows: impl IntoIterator<Item = (Labels, Option<f64>)>,
    ) {
        let fam = Family::<Labels, C>::default();
        let mut any = false;
        for (labels, v) in rows {
            if let Some(v) = v.filter(|v| v.is_finite() && *v >= 0.0) {
                fam.get_or_create(&labels).inc_by(v);
                any = true;
            }
        }
        if any {
            match unit {
                Some(u) => self.reg.register_with_unit(name, help, u, fam),
                None => self.reg.register(name, help, fam),
            }
        }
    }

    /// One unlabelled counter.
    pub fn counter(&mut self, name: &str, help: &str, unit: Option<Unit>, v: Option<f64>) {
        self.counters(name, help, unit, [(Labels::new(), v)]);
    }
}
