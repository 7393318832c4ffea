//! The view that shows a finding's evidence, named by the model so the app can open it
//! without asking the renderer what a name means.

use serde::Serialize;

/// Where a finding's evidence is on screen. `--json` writes it as `findings[].view`, the
/// lowercase name (`main`, `futexes`, `locks`, `ipi`, `latency`, `cgroups`): a public contract, so a
/// variant added here is a new name, and an existing name never changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FindingView {
    /// The overview: the runnable panel, the per-core panel, the process table.
    #[default]
    Main,
    Futexes,
    Locks,
    Ipi,
    Latency,
    Cgroups,
}

impl FindingView {
    pub const ALL: [FindingView; 6] = [
        FindingView::Main,
        FindingView::Futexes,
        FindingView::Locks,
        FindingView::Ipi,
        FindingView::Latency,
        FindingView::Cgroups,
    ];

    /// The name `--json` writes.
    pub fn name(self) -> &'static str {
        match self {
            FindingView::Main => "main",
            FindingView::Futexes => "futexes",
            FindingView::Locks => "locks",
            FindingView::Ipi => "ipi",
            FindingView::Latency => "latency",
            FindingView::Cgroups => "cgroups",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::Finding;

    /// The JSON names are the ones `findings[].view` had when it was a string: the
    /// contract's exact list, and serde writes each variant as `name()` says.
    #[test]
    fn json_names_are_the_contracts_strings() {
        let names: Vec<&str> = FindingView::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(
            names,
            ["main", "futexes", "locks", "ipi", "latency", "cgroups"]
        );
        for v in FindingView::ALL {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name(), "{v:?}");
        }
        let f = Finding {
            kind: "hot_lock",
            view: FindingView::Futexes,
            ..Default::default()
        };
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(j["view"], "futexes");
        assert_eq!(
            serde_json::to_value(Finding::default()).unwrap()["view"],
            "main"
        );
    }
}
