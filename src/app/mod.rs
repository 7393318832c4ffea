//! The UI thread's state and input: what is shown, how it is sorted, where the cursor
//! is. Keys map to one `Action` through the keymap table, which also generates the help
//! screen and the footer, so they never drift.

pub mod act;
pub mod act_exec;
pub mod cgroup_view;
pub mod col_chooser;
pub mod config_file;
pub mod contention_view;
pub mod irq_view;
pub mod keymap;
pub mod mouse;
pub mod player;
mod profile_lines;
pub mod profile_view;
pub mod prompt_edit;
pub mod replay;
pub mod replay_keys;
pub mod row;
pub mod run;
pub mod screen;
pub mod sort;
pub mod state;
pub mod term_input;
pub mod thread_rows;
pub mod tree;
pub mod view;

pub use keymap::Action;
pub use state::{App, View};
