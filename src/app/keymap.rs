//! The keymap: one table from keys to Actions. Key handling, the help screen and the
//! footer are all generated from it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::sort::ProcSort;
use super::view::View;

/// Rows moved by PgUp/PgDn.
pub const PAGE: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    TogglePause,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    SortNext,
    SortReverse,
    Help,
    NextView,
    PrevView,
    /// Show this view (number keys).
    GoTo(View),
    /// Close the help screen or go back to the previous view.
    Back,
    /// Open the threads of the selected process.
    Open,
    /// Type a filter (PIDs or a name); the table narrows as you type.
    Filter,
    /// Sort the process table by this column.
    SortBy(ProcSort),
    /// A replay control (only while replaying; see `replay_keys`).
    Replay(ReplayAction),
    /// Start / stop recording the session to a file (live only).
    ToggleRecord,
    /// Open the view with the evidence of the selected finding; again: the next one.
    Evidence,
    /// Move left / right (the profile view's frames).
    Left,
    Right,
    /// Profile view: the function table instead of the graph.
    ProfileTable,
    /// Profile view: last 30 s or since the start.
    ProfileWindow,
    /// Profile view: search frames by name.
    ProfileSearch,
    /// Profile view: write the shown stacks to a folded file.
    ProfileExport,
    /// Profile view: on-CPU samples or time off the CPU.
    ProfileOffCpu,
    /// Open the profile view scoped to the selected process.
    ProfileOf,
    /// Stop ttop as a shell stops a job (Ctrl-Z), the terminal put back; `fg` resumes.
    Suspend,
    /// Read every finding whole, with its figures (a screen over the view).
    Findings,
    /// Show or hide the rows of processes that exited.
    HideExited,
    /// Choose the process table's columns.
    Columns,
    /// Send a signal to the selected process (a menu, then a confirmation).
    Kill,
    /// Change the selected process's nice value by this much (confirmed).
    NiceBy(i32),
    /// Set the CPUs the selected process may run on (typed, then confirmed).
    Affinity,
    /// The process table as a tree, or flat.
    Tree,
    /// Hide / show kernel threads.
    HideKernel,
    /// Show / hide each process's threads under it in the tree.
    ShowThreads,
}

/// What a replay key asks the player to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayAction {
    PlayPause,
    /// Step this many frames (negative: back).
    Step(i64),
    /// Jump this many seconds of recorded time.
    Jump(i64),
    /// Open the "go to" prompt (clock time or offset).
    GoTo,
    Faster,
    Slower,
    /// Go to where the next (true) or previous finding starts.
    Finding(bool),
}

/// A key as written in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Code(KeyCode),
}

pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    /// How the key is named in the help screen and footer.
    pub label: &'static str,
    pub help: &'static str,
    /// The word shown in the footer (the most useful keys only have one).
    pub footer: Option<&'static str>,
    /// Views where the binding applies (None: everywhere).
    pub views: Option<&'static [View]>,
}

use KeyCode as K;

const PROFILE: &[View] = &[View::Profile];

#[rustfmt::skip]
pub const KEYMAP: &[Binding] = &[
    // The profile view's own keys first: `/` searches there rather than filtering.
    Binding { keys: &[Key::Char('/')], action: Action::ProfileSearch, label: "/", help: "search frames by name: matches are bold and underlined, their share of samples shown", footer: Some("search"), views: Some(PROFILE) },
    Binding { keys: &[Key::Code(K::Enter)], action: Action::Open, label: "Enter", help: "zoom into the selected frame (it takes the full width)", footer: Some("zoom"), views: Some(PROFILE) },
    Binding { keys: &[Key::Code(K::Esc), Key::Code(K::Backspace)], action: Action::Back, label: "Esc/Bksp", help: "clear the search, else zoom out one frame, else show every process", footer: None, views: Some(PROFILE) },
    Binding { keys: &[Key::Code(K::Left), Key::Char('h')], action: Action::Left, label: "←/h", help: "the frame to the left (h while replaying: ← steps time there)", footer: None, views: Some(PROFILE) },
    Binding { keys: &[Key::Code(K::Right), Key::Char('l')], action: Action::Right, label: "→/l", help: "the frame to the right", footer: None, views: Some(PROFILE) },
    Binding { keys: &[Key::Char('t')], action: Action::ProfileTable, label: "t", help: "table of functions by self and total samples (perf report)", footer: Some("table"), views: Some(PROFILE) },
    Binding { keys: &[Key::Char('w')], action: Action::ProfileWindow, label: "w", help: "window: the last 30 intervals or since the start", footer: Some("window"), views: Some(PROFILE) },
    Binding { keys: &[Key::Char('o')], action: Action::ProfileOffCpu, label: "o", help: "on-CPU samples or time off the CPU, by why (needs a process: F, or a filter)", footer: Some("on/off-CPU"), views: Some(PROFILE) },
    Binding { keys: &[Key::Char('E')], action: Action::ProfileExport, label: "E", help: "export the stacks shown (the zoomed frame's) to ttop-<UTC time>.folded and .pb (pprof) here", footer: None, views: Some(PROFILE) },
    Binding { keys: &[Key::Char('F')], action: Action::ProfileOf, label: "F", help: "flame graph of this process", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('q'), Key::Ctrl('c')], action: Action::Quit, label: "q", help: "quit (also Ctrl-C)", footer: Some("quit"), views: None },
    Binding { keys: &[Key::Ctrl('z')], action: Action::Suspend, label: "Ctrl-Z", help: "suspend to the shell (fg resumes), as any job", footer: None, views: None },
    Binding { keys: &[Key::Char(' ')], action: Action::TogglePause, label: "space", help: "pause the display (collection goes on)", footer: Some("pause"), views: None },
    Binding { keys: &[Key::Code(K::Up), Key::Char('k')], action: Action::Up, label: "↑/k", help: "move the selection up", footer: None, views: None },
    Binding { keys: &[Key::Code(K::Down), Key::Char('j')], action: Action::Down, label: "↓/j", help: "move the selection down", footer: Some("move"), views: None },
    Binding { keys: &[Key::Code(K::PageUp)], action: Action::PageUp, label: "PgUp", help: "one page up", footer: None, views: None },
    Binding { keys: &[Key::Code(K::PageDown)], action: Action::PageDown, label: "PgDn", help: "one page down", footer: None, views: None },
    Binding { keys: &[Key::Code(K::Home)], action: Action::Home, label: "Home", help: "first row", footer: None, views: None },
    Binding { keys: &[Key::Code(K::End)], action: Action::End, label: "End", help: "last row", footer: None, views: None },
    Binding { keys: &[Key::Code(K::Enter)], action: Action::Open, label: "Enter", help: "show the threads of the selected process", footer: Some("threads"), views: Some(&[View::Main]) },
    Binding { keys: &[Key::Code(K::Esc)], action: Action::Back, label: "Esc", help: "close help / leave the thread view", footer: None, views: None },
    Binding { keys: &[Key::Char('p'), Key::Char('/')], action: Action::Filter, label: "p or /", help: "filter: PIDs or a name, narrows as you type", footer: Some("filter"), views: None },
    Binding { keys: &[Key::Char('s')], action: Action::SortNext, label: "s", help: "sort by the next column", footer: Some("sort"), views: None },
    Binding { keys: &[Key::Char('S')], action: Action::SortReverse, label: "S", help: "reverse the sort order", footer: None, views: None },
    Binding { keys: &[Key::Char('P')], action: Action::SortBy(ProcSort::CpuTrue), label: "P", help: "sort by TRUE% (eBPF CPU)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('C')], action: Action::SortBy(ProcSort::CpuScan), label: "C", help: "sort by SCAN% (top's CPU)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('X')], action: Action::SortBy(ProcSort::Miss), label: "X", help: "sort by what thread rows miss", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('G')], action: Action::SortBy(ProcSort::Ghosts), label: "G", help: "sort by ghost threads", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('W')], action: Action::SortBy(ProcSort::RunqWait), label: "W", help: "sort by run-queue wait", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('N')], action: Action::SortBy(ProcSort::Pid), label: "N", help: "sort by PID", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('c')], action: Action::Columns, label: "c", help: "choose the process table's columns (↑/↓, space turns one on or off, Esc closes)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('x')], action: Action::HideExited, label: "x", help: "hide / show the rows of processes that exited (during the interval, or watched ones that went)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('t'), Key::Code(K::F(5))], action: Action::Tree, label: "t/F5", help: "tree: each process under its parent (again: flat)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('H')], action: Action::ShowThreads, label: "H", help: "show / hide each process's threads under it in the tree (hidden at first; showing them turns the tree on)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('K')], action: Action::HideKernel, label: "K", help: "hide / show kernel threads (kthreadd's children)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Code(K::F(9))], action: Action::Kill, label: "F9", help: "send a signal to the selected process (←/→ choose, Enter, y confirms)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Code(K::F(7)), Key::Char(']')], action: Action::NiceBy(-1), label: "F7/]", help: "nice -1 for every thread of the selected process: more CPU (confirmed; needs root)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Code(K::F(8)), Key::Char('[')], action: Action::NiceBy(1), label: "F8/[", help: "nice +1 for every thread of the selected process: less CPU (confirmed)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('a')], action: Action::Affinity, label: "a", help: "set the CPUs the selected process runs on (a list like 0,2-3, confirmed)", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Char('M')], action: Action::SortBy(ProcSort::Rss), label: "M", help: "sort by resident memory", footer: None, views: Some(&[View::Main]) },
    Binding { keys: &[Key::Code(K::Tab)], action: Action::NextView, label: "Tab", help: "next view", footer: Some("view"), views: None },
    Binding { keys: &[Key::Code(K::BackTab)], action: Action::PrevView, label: "S-Tab", help: "previous view", footer: None, views: None },
    Binding { keys: &[Key::Char('1')], action: Action::GoTo(View::Main), label: "1", help: "overview", footer: None, views: None },
    Binding { keys: &[Key::Char('2')], action: Action::GoTo(View::Futexes), label: "2", help: "futexes: contended words, waits, callers", footer: None, views: None },
    Binding { keys: &[Key::Char('3')], action: Action::GoTo(View::Locks), label: "3", help: "kernel locks and mmap_lock holders", footer: None, views: None },
    Binding { keys: &[Key::Char('4')], action: Action::GoTo(View::Ipi), label: "4", help: "IPIs per CPU, TLB shootdowns, who sends them", footer: None, views: None },
    Binding { keys: &[Key::Char('5')], action: Action::GoTo(View::Latency), label: "5", help: "scheduling latency per CPU and thread", footer: None, views: None },
    Binding { keys: &[Key::Char('6')], action: Action::GoTo(View::Profile), label: "6", help: "profile: flame graph of stacks", footer: None, views: None },
    Binding { keys: &[Key::Char('7')], action: Action::GoTo(View::Cgroups), label: "7", help: "cgroups (v2) as a tree: CPU, throttling, pressure, memory, I/O", footer: None, views: None },
    Binding { keys: &[Key::Char('8')], action: Action::GoTo(View::Time), label: "8", help: "where the time goes: each process's threads split into on CPU, runnable, futex, I/O, fault, sleeps", footer: None, views: None },
    Binding { keys: &[Key::Char('f')], action: Action::Findings, label: "f", help: "findings: read each one whole, with the figures that raised it (↑/↓ scroll)", footer: None, views: None },
    Binding { keys: &[Key::Char('e')], action: Action::Evidence, label: "e", help: "evidence: open the view of the marked finding (again: the next one)", footer: None, views: None },
    Binding { keys: &[Key::Char('R')], action: Action::ToggleRecord, label: "R", help: "start / stop recording (to --record FILE, else ttop-<UTC time>.ttop here)", footer: Some("record"), views: None },
    Binding { keys: &[Key::Char('?'), Key::Code(K::F(1))], action: Action::Help, label: "?", help: "this help", footer: Some("help"), views: None },
];

pub(crate) fn matches(k: &Key, ev: &KeyEvent) -> bool {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    match (*k, ev.code) {
        (Key::Ctrl(c), KeyCode::Char(e)) => ctrl && e.eq_ignore_ascii_case(&c),
        (Key::Char(c), KeyCode::Char(e)) => !ctrl && e == c,
        (Key::Code(c), e) => c == e,
        _ => false,
    }
}

/// The action a key press means in `view`, if any.
pub fn action_for(ev: &KeyEvent, view: View) -> Option<Action> {
    KEYMAP
        .iter()
        .filter(|b| b.views.is_none_or(|v| v.contains(&view)))
        .find(|b| b.keys.iter().any(|k| matches(k, ev)))
        .map(|b| b.action)
}

/// The bindings that apply in `view` (for the help screen and footer).
pub fn bindings_for(view: View) -> impl Iterator<Item = &'static Binding> {
    KEYMAP
        .iter()
        .filter(move |b| b.views.is_none_or(|v| v.contains(&view)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(c, m)
    }

    #[test]
    fn quit_keys() {
        assert_eq!(
            action_for(&key(KeyCode::Char('q'), KeyModifiers::NONE), View::Main),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('c'), KeyModifiers::CONTROL), View::Main),
            Some(Action::Quit)
        );
        // Without Ctrl, c is the column chooser, not quit.
        assert_eq!(
            action_for(&key(KeyCode::Char('c'), KeyModifiers::NONE), View::Main),
            Some(Action::Columns)
        );
    }

    #[test]
    fn sort_keys_are_case_sensitive() {
        assert_eq!(
            action_for(&key(KeyCode::Char('s'), KeyModifiers::NONE), View::Main),
            Some(Action::SortNext)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('S'), KeyModifiers::SHIFT), View::Main),
            Some(Action::SortReverse)
        );
    }

    #[test]
    fn every_binding_has_help_text() {
        for b in KEYMAP {
            assert!(!b.help.is_empty() && !b.label.is_empty() && !b.keys.is_empty());
        }
    }
}
