//! Process and thread rows: the one table of a process row's fields (`fields`), the scan's rows joined with eBPF's (`rows`, `threads`), the
//! per-process sums (`totals`), what a thread-mode scan missed (`top_view`, `ghosts`),
//! the tasks remembered from the previous interval (`prev_tasks`), and where their wall
//! time went (`wall`).

pub mod blocked;
pub mod everyday;
pub mod fields;
pub mod ghosts;
pub mod prev_tasks;
pub mod proc_frame;
pub mod rows;
pub mod threads;
pub mod top_view;
pub mod totals;
pub mod wall;
