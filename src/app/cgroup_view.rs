//! The cgroup view's own state: which row of the tree is selected (the renderer keeps it
//! on screen and marks it).

use super::keymap::{Action, PAGE};
use super::view::View;

#[derive(Debug, Clone, Default)]
pub struct CgroupView {
    /// The selected row, in tree order (clamped to the rows when drawn).
    pub sel: usize,
}

impl CgroupView {
    /// Handle `a` if it is this view's; false otherwise.
    pub fn handle(&mut self, view: View, a: Action) -> bool {
        if view != View::Cgroups {
            return false;
        }
        let s = &mut self.sel;
        match a {
            Action::Up => *s = s.saturating_sub(1),
            Action::Down => *s += 1,
            Action::PageUp => *s = s.saturating_sub(PAGE),
            Action::PageDown => *s += PAGE,
            Action::Home => *s = 0,
            Action::End => *s = usize::MAX,
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_move_the_selection_only_in_the_cgroup_view() {
        let mut v = CgroupView::default();
        assert!(!v.handle(View::Main, Action::Down));
        assert!(v.handle(View::Cgroups, Action::Down));
        assert!(v.handle(View::Cgroups, Action::PageDown));
        assert_eq!(v.sel, 1 + PAGE);
        assert!(v.handle(View::Cgroups, Action::Home));
        assert_eq!(v.sel, 0);
        assert!(!v.handle(View::Cgroups, Action::SortNext));
    }
}
