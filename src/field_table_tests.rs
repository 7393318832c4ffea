//! The field table (`model::procs::fields`) against what is made from it: the process
//! table's columns, the sort keys, the column chooser and the per-process metric
//! families. A field is added by one row of the table; these check the row reached
//! every place.

use std::collections::HashSet;

use crate::app::App;
use crate::app::sort::ProcSort;
use crate::model::derive;
use crate::model::fixtures::{incident, system};
use crate::model::procs::fields::{FIELDS, ProcField, group_counters};
use crate::ui::theme::Theme;

/// Every field once, with help, and found again by its id.
#[test]
fn every_field_once_with_help() {
    for (i, f) in FIELDS.iter().enumerate() {
        assert!(!f.help.trim().is_empty(), "{}", f.title);
        assert_eq!(
            FIELDS.iter().position(|g| g.id == f.id),
            Some(i),
            "{}",
            f.title
        );
        assert_eq!(f.id.field().title, f.title);
    }
}

/// Every field is a column on a screen wide enough, in the table's order; a sortable
/// one is shown at every width while the table is sorted by it.
#[test]
fn every_field_is_a_column() {
    let wide = crate::ui::procs::columns(u16::MAX, ProcSort::Pid, &[]);
    let ids: Vec<ProcField> = wide.iter().map(|c| c.id).collect();
    let all: Vec<ProcField> = FIELDS.iter().map(|f| f.id).collect();
    assert_eq!(ids, all);
    for f in FIELDS.iter().filter(|f| f.sort.is_some()) {
        let narrow = crate::ui::procs::columns(40, f.id, &[f.id]);
        assert!(narrow.iter().any(|c| c.id == f.id), "{}", f.title);
    }
}

/// Every sortable field is a sort key (`s` reaches it), under a name of its own; the
/// others are not.
#[test]
fn every_sortable_field_is_a_sort_key() {
    let keys = ProcSort::all();
    let mut names = HashSet::new();
    for f in FIELDS {
        match f.sort {
            Some(s) => {
                assert!(keys.contains(&f.id), "{}", f.title);
                assert_eq!(f.id.name(), s.name);
                assert!(names.insert(s.name.to_ascii_lowercase()), "{}", s.name);
            }
            None => assert!(!keys.contains(&f.id), "{}", f.title),
        }
    }
    let mut k = ProcSort::Pid;
    for _ in 0..keys.len() {
        k = k.next();
        assert!(keys.contains(&k));
    }
    assert_eq!(k, ProcSort::Pid, "s comes round through every key");
}

/// The column chooser lists every field, with its mark.
#[test]
fn every_field_is_in_the_column_chooser() {
    let mut app = App::new();
    app.col_chooser = Some(0);
    let h = FIELDS.len() as u16 + 2;
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, h))
        .expect("a test terminal");
    let th = Theme::new(false);
    term.draw(|f| crate::ui::col_chooser::render(f, f.area(), &app, &th))
        .expect("drawing to a test terminal");
    let buf = term.backend().buffer();
    let lines: Vec<String> = (0..h)
        .map(|y| (0..100).map(|x| buf[(x, y)].symbol()).collect())
        .collect();
    for f in FIELDS {
        let mark = format!(" {:<9} ", f.title);
        assert!(
            lines.iter().any(|l| l.contains(&mark) && l.contains("[")),
            "{} not in the chooser",
            f.title
        );
    }
}

/// Every field with a metric has its family in the /metrics text, with its help; every
/// per-process family there comes from the table (the per-name `process_group_*`
/// counters are `serve::groups`', made from the frame's processes, not from one field).
#[test]
fn every_metric_field_is_a_family_and_every_process_family_a_field() {
    let f = derive(&system(), Some(&incident(10, true)), &incident(12, true));
    let text = crate::serve::metrics::render(&f, 5);
    let from_table: HashSet<&str> = FIELDS
        .iter()
        .filter_map(|f| f.metric)
        .map(|m| m.name)
        .collect();
    assert!(!from_table.is_empty());
    for m in FIELDS.iter().filter_map(|f| f.metric) {
        assert!(
            text.contains(&format!("# TYPE ttop_{} gauge\n", m.name)),
            "{}",
            m.name
        );
        assert!(
            text.contains(&format!("# HELP ttop_{} {}", m.name, m.help)),
            "{}",
            m.name
        );
        assert!(
            text.contains(&format!("\nttop_{}{{", m.name)),
            "{} has no series",
            m.name
        );
    }
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ttop_"))
        .filter_map(|l| l.split(' ').next())
        .filter(|n| n.starts_with("process_"))
        .collect();
    assert_eq!(families.len(), from_table.len());
    for n in families {
        assert!(
            from_table.contains(n),
            "ttop_{n} is not from the field table"
        );
    }
}

/// Every field with a group counter has its per-name family in the /metrics text, with
/// its help and unit and a series for `comm=""`; the other `process_group_*` families are
/// the two that are no field's (futex wait seconds, the processes count).
#[test]
fn every_group_counter_field_is_a_family() {
    let mut g = crate::serve::groups::Groups::new(2, &crate::serve::groups::DEFAULT_TOP_BY);
    g.add(&derive(
        &system(),
        Some(&incident(10, true)),
        &incident(12, true),
    ));
    let mut o = crate::serve::out::Out::new();
    crate::serve::counters::groups(&mut o, &g);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &o.reg).expect("encoding to a String");
    let mut from_table = HashSet::new();
    for (id, c) in group_counters() {
        let family = match c.seconds {
            true => format!("ttop_{}_seconds", c.name),
            false => format!("ttop_{}", c.name),
        };
        assert!(
            text.contains(&format!("# TYPE {family} counter\n")),
            "{id:?}"
        );
        assert!(
            text.contains(&format!("# HELP {family} {}.\n", c.help)),
            "{id:?}"
        );
        assert_eq!(
            text.contains(&format!("# UNIT {family} seconds\n")),
            c.seconds,
            "{id:?}"
        );
        assert!(
            text.contains(&format!("\n{family}_total{{comm=\"\"}} ")),
            "{family} has no series"
        );
        from_table.insert(family);
    }
    assert!(!from_table.is_empty());
    let by_hand = [
        "ttop_process_group_futex_wait_seconds",
        "ttop_process_group_processes",
    ];
    for n in text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
    {
        assert!(
            from_table.contains(n) || by_hand.contains(&n),
            "{n} is neither from the field table nor one of the two by hand"
        );
    }
}
