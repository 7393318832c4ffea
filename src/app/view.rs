//! The screens the dashboard shows, in Tab order, and which of them holds a finding's
//! evidence (the model names it with `FindingView`; the app owns what a screen is).

use crate::model::findings::FindingView;

/// The screens reachable with Tab. Other views are added here, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Main,
    Futexes,
    Locks,
    Ipi,
    Latency,
    Profile,
    Cgroups,
    Time,
}

impl View {
    pub const ALL: &'static [View] = &[
        View::Main,
        View::Futexes,
        View::Locks,
        View::Ipi,
        View::Latency,
        View::Profile,
        View::Cgroups,
        View::Time,
    ];

    pub fn title(self) -> &'static str {
        match self {
            View::Main => "Overview",
            View::Futexes => "Futexes",
            View::Locks => "Locks",
            View::Ipi => "IPIs/TLB",
            View::Latency => "Latency",
            View::Profile => "Profile",
            View::Cgroups => "Cgroups",
            View::Time => "Time",
        }
    }
}

impl From<FindingView> for View {
    fn from(v: FindingView) -> View {
        match v {
            FindingView::Main => View::Main,
            FindingView::Futexes => View::Futexes,
            FindingView::Locks => View::Locks,
            FindingView::Ipi => View::Ipi,
            FindingView::Latency => View::Latency,
            FindingView::Cgroups => View::Cgroups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every view a finding can name opens the screen of that name, and no two names
    /// open the same screen.
    #[test]
    fn each_finding_view_opens_its_screen() {
        let want = [
            (FindingView::Main, View::Main),
            (FindingView::Futexes, View::Futexes),
            (FindingView::Locks, View::Locks),
            (FindingView::Ipi, View::Ipi),
            (FindingView::Latency, View::Latency),
            (FindingView::Cgroups, View::Cgroups),
        ];
        assert_eq!(want.len(), FindingView::ALL.len());
        for (fv, v) in want {
            assert_eq!(View::from(fv), v);
        }
    }
}
