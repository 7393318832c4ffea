//! The UI thread's state: what is shown, how it is sorted, where the cursor is.

pub mod run;
