//! What the replay time bar shows: plain data the player fills in and `ui::timebar`
//! draws.

/// What the time bar shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayBar {
    pub file: String,
    /// Wall clock (ns since the epoch) of the first Sample, the one shown, and the last.
    pub start_ns: u64,
    pub at_ns: u64,
    pub end_ns: u64,
    /// Frame number shown (1-based) and how many frames there are.
    pub frame: usize,
    pub frames: usize,
    pub playing: bool,
    pub speed: &'static str,
    /// The "go to" prompt while it is open.
    pub goto: Option<String>,
    /// The last problem (a damaged frame skipped, a bad "go to").
    pub note: Option<String>,
    /// Where findings were active: [`MARK_BUCKETS`] equal stretches of the recording,
    /// each a `marks` level (0 not judged yet, 1 none, 2 info, 3 warn, 4 critical).
    pub marks: Vec<u8>,
}

/// Stretches of the recording the time bar's marks are kept in (the bar is at most 60
/// cells wide; each cell takes the most severe of its stretches).
pub const MARK_BUCKETS: usize = 240;
