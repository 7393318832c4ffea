//! The dashboard's settings file (`~/.config/ttop/config.toml`, or `--config FILE`):
//! the view it opens on, the process table's sort, tree and hidden rows, the interval
//! and colour. Read at start; written back when the dashboard ends, if what it shows
//! was changed. A file that cannot be read or parsed is never overwritten: the
//! dashboard starts with the defaults and says which line is wrong.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::col_chooser::hideable;
use super::sort::ProcSort;
use super::state::App;
use super::view::View;
use crate::model::procs::fields::{FIELDS, ProcField};

/// The file's keys; each is optional (absent: the default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// overview, futexes, locks, ipi, latency or profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// A process table column by its sort name (model/procs/fields.rs): TRUE%, SCAN%, MISS,
    /// GHOST/s, NEW/s, EXIT/s, RQWAIT, THR, RSS, PID, COMM, USER, PR, NI, TIME+, START,
    /// VCSW/s, ICSW/s or MAJFLT/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hide_kernel_threads: Option<bool>,
    /// The tree shows each process's threads under it (H).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_threads: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hide_exited: Option<bool>,
    /// Seconds between frames, when `-d` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<f64>,
    /// false: no colour (as NO_COLOR), when `--color` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<bool>,
    /// Process table columns turned off in the column chooser (c), by their titles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_columns: Option<Vec<String>>,
}

const VIEWS: &[(&str, View)] = &[
    ("overview", View::Main),
    ("futexes", View::Futexes),
    ("locks", View::Locks),
    ("ipi", View::Ipi),
    ("latency", View::Latency),
    ("profile", View::Profile),
    ("cgroups", View::Cgroups),
    ("time", View::Time),
];

/// Where the file is: `$XDG_CONFIG_HOME/ttop/config.toml`, else
/// `$HOME/.config/ttop/config.toml` (None without either).
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))?;
    Some(base.join("ttop").join("config.toml"))
}

/// The file named by `--config`, else the default one (None without a home).
pub fn load_for(given: Option<&Path>) -> Option<ConfigFile> {
    let path = given.map(Path::to_path_buf).or_else(default_path)?;
    Some(ConfigFile::load(&path))
}

/// The settings file as read at start.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub settings: Settings,
    /// Why the file was not used (it is then left alone).
    pub error: Option<String>,
}

impl ConfigFile {
    /// Read `path`; a missing file is an empty one.
    pub fn load(path: &Path) -> Self {
        let (settings, error) = match std::fs::read_to_string(path) {
            Ok(text) => match parse(&text) {
                Ok(s) => (s, None),
                Err(e) => (Settings::default(), Some(format!("{}:{e}", path.display()))),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Settings::default(), None),
            Err(e) => (
                Settings::default(),
                Some(format!("{}: {e}", path.display())),
            ),
        };
        ConfigFile {
            path: path.to_path_buf(),
            settings,
            error,
        }
    }

    /// Write `now` if the user changed something since `start` (both from `capture`),
    /// and the file was usable. Written whole to a temporary file and renamed over, so a
    /// crash leaves the old one.
    pub fn save(&self, start: &Settings, now: &Settings) -> std::io::Result<bool> {
        if self.error.is_some() || now == start {
            return Ok(false);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = format!(
            "# ttop's dashboard settings, written when they change (see docs/config.md).\n{}",
            toml::to_string(now).map_err(std::io::Error::other)?
        );
        let tmp = self.path.with_extension("toml.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)?;
        Ok(true)
    }
}

/// Parse the file's text; the error names the line and column, and the key or value.
pub fn parse(text: &str) -> Result<Settings, String> {
    let s: Settings = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|r| {
            let line = text[..r.start].matches('\n').count() + 1;
            let col = r.start - text[..r.start].rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{line}:{col}: ")
        });
        format!("{}{}", at.unwrap_or_default(), e.message())
    })?;
    let line_of = |key: &str| {
        text.lines()
            .position(|l| l.trim_start().starts_with(key))
            .map_or(String::new(), |i| format!("{}: ", i + 1))
    };
    if let Some(v) = &s.view
        && view_named(v).is_none()
    {
        let names: Vec<&str> = VIEWS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "{}view {v:?} is not one of {}",
            line_of("view"),
            names.join(", ")
        ));
    }
    if let Some(v) = &s.sort
        && sort_named(v).is_none()
    {
        let names: Vec<&str> = ProcSort::all().iter().map(|k| k.name()).collect();
        return Err(format!(
            "{}sort {v:?} is not one of {}",
            line_of("sort"),
            names.join(", ")
        ));
    }
    if let Some(bad) = s
        .hidden_columns
        .iter()
        .flatten()
        .find(|t| column_named(t).is_none())
    {
        return Err(format!(
            "{}hidden_columns: {bad:?} is not a column that can be hidden (PID, USER, COMM, TIME+...)",
            line_of("hidden_columns")
        ));
    }
    if let Some(i) = s.interval
        && !(0.05..=3600.0).contains(&i)
    {
        return Err(format!(
            "{}interval {i} is not between 0.05 and 3600 seconds",
            line_of("interval")
        ));
    }
    Ok(s)
}

fn view_named(name: &str) -> Option<View> {
    VIEWS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

fn sort_named(name: &str) -> Option<ProcSort> {
    ProcSort::all()
        .into_iter()
        .find(|k| k.name().eq_ignore_ascii_case(name))
}

/// A column that can be turned off, by its title (any case).
fn column_named(title: &str) -> Option<ProcField> {
    FIELDS
        .iter()
        .find(|f| f.title.eq_ignore_ascii_case(title) && hideable(f.id))
        .map(|f| f.id)
}

/// Put the settings into a new App.
pub fn apply(s: &Settings, app: &mut App) {
    if let Some(v) = s.view.as_deref().and_then(view_named) {
        app.view = v;
    }
    if let Some(k) = s.sort.as_deref().and_then(sort_named) {
        app.proc_sort = k;
    }
    app.proc_reverse = s.reverse.unwrap_or(app.proc_reverse);
    app.tree = s.tree.unwrap_or(app.tree);
    app.hide_kernel = s.hide_kernel_threads.unwrap_or(app.hide_kernel);
    app.show_threads = s.show_threads.unwrap_or(app.show_threads);
    app.hide_exited = s.hide_exited.unwrap_or(app.hide_exited);
    if let Some(cols) = &s.hidden_columns {
        app.hidden_cols = cols.iter().filter_map(|t| column_named(t)).collect();
    }
}

/// What the App shows now, as settings: `was`'s keys kept where the App has nothing to
/// say (interval, colour), the rest as the user left them.
pub fn capture(app: &App, was: &Settings) -> Settings {
    let view = VIEWS.iter().find(|(_, v)| *v == app.view).map(|(n, _)| n);
    Settings {
        view: view.map(|n| n.to_string()),
        sort: if app.sort_by_default {
            was.sort.clone()
        } else {
            Some(app.proc_sort.name().to_string())
        },
        reverse: Some(app.proc_reverse),
        tree: Some(app.tree),
        hide_kernel_threads: Some(app.hide_kernel),
        show_threads: Some(app.show_threads),
        hide_exited: Some(app.hide_exited),
        interval: was.interval,
        color: was.color,
        hidden_columns: (!app.hidden_cols.is_empty()).then(|| {
            app.hidden_cols
                .iter()
                .map(|c| c.field().title.to_string())
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_file_names_its_line() {
        let e = parse("view = \"futexes\"\nsort = 3\n").unwrap_err();
        assert!(e.starts_with("2:8: "), "{e}");
        let e = parse("tree = true\nsort = \"cpu\"\n").unwrap_err();
        assert!(
            e.starts_with("2: sort \"cpu\" is not one of PID, USER"),
            "{e}"
        );
        let e = parse("colour = false\n").unwrap_err();
        assert!(e.starts_with("1:1: ") && e.contains("colour"), "{e}");
        let e = parse("interval = 0\n").unwrap_err();
        assert!(e.contains("interval 0 is not between"), "{e}");
    }

    #[test]
    fn settings_round_trip_through_an_app() {
        let s = parse(
            "view = \"locks\"\nsort = \"rss\"\ntree = true\nshow_threads = true\ninterval = 2.5\nhidden_columns = [\"time+\", \"USER\"]\n",
        )
        .unwrap();
        let mut app = App::new();
        apply(&s, &mut app);
        assert_eq!(
            (app.view, app.proc_sort, app.tree, app.show_threads),
            (View::Locks, ProcSort::Rss, true, true)
        );
        assert_eq!(app.hidden_cols, [ProcField::CpuTime, ProcField::User]);
        let back = capture(&app, &s);
        assert_eq!(
            back.hidden_columns.as_deref(),
            Some(&["TIME+".to_string(), "USER".to_string()][..])
        );
        assert!(parse("hidden_columns = [\"PID\"]\n").is_err());
        assert_eq!(back.interval, Some(2.5));
        assert_eq!(parse(&toml::to_string(&back).unwrap()).unwrap(), back);
    }
}
