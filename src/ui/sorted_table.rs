//! A sortable table of fixed columns plus free-text columns at the right, shared by the
//! futex and kernel-lock views: the sorted column is marked, narrow screens drop the
//! columns that ask for more width, and an empty table says why.

use ratatui::Frame as TermFrame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::theme::Theme;
use crate::app::mouse::{SortKey, TableGeom, TableKind};

/// One fixed-width column of rows of type R, sortable by S.
pub struct Col<R, S> {
    pub title: &'static str,
    /// What the column means and its unit (the help screen lists it).
    pub help: &'static str,
    pub width: u16,
    /// Shown only when the screen is at least this wide.
    pub min_screen: u16,
    pub sort: Option<S>,
    /// The cell text, given the row and the interval in seconds.
    pub value: fn(&R, f64) -> String,
}

/// A free-text column after the fixed ones: title, minimum width, text of a row.
pub type TextCol<'a, R> = (&'static str, u16, &'a dyn Fn(&R) -> String);

pub struct Table2<'a, R, S> {
    pub cols: &'a [Col<R, S>],
    pub texts: Vec<TextCol<'a, R>>,
    pub sort: S,
    pub reverse: bool,
    pub title: String,
    /// Said when there are no rows.
    pub empty: &'a str,
    pub style: &'a dyn Fn(&R) -> Style,
}

impl<R, S: PartialEq + Copy + Into<SortKey>> Table2<'_, R, S> {
    /// Draw it; what it returns is where its header titles went (a click there sorts).
    pub fn render(
        &self,
        f: &mut TermFrame,
        area: Rect,
        screen_w: u16,
        rows: &[&R],
        secs: f64,
        th: &Theme,
    ) -> Option<TableGeom> {
        let cols: Vec<&Col<R, S>> = self
            .cols
            .iter()
            .filter(|c| screen_w >= c.min_screen)
            .collect();
        let arrow = if self.reverse { "▲" } else { "▼" };
        let mut header: Vec<Cell> = cols
            .iter()
            .map(|c| {
                let sorted = c.sort == Some(self.sort);
                let t = if sorted {
                    format!("{}{arrow}", c.title)
                } else {
                    c.title.to_string()
                };
                Cell::from(Span::styled(t, if sorted { th.warn } else { th.title }))
            })
            .collect();
        header.extend(
            self.texts
                .iter()
                .map(|t| Cell::from(Span::styled(t.0, th.title))),
        );
        let body_h = area.height.saturating_sub(2) as usize;
        let body: Vec<Row> = rows
            .iter()
            .take(body_h)
            .map(|r| {
                let mut cells: Vec<Cell> = cols
                    .iter()
                    .map(|c| Cell::from((c.value)(r, secs)))
                    .collect();
                cells.extend(self.texts.iter().map(|t| Cell::from((t.2)(r))));
                Row::new(cells).style((self.style)(r))
            })
            .collect();
        let mut widths: Vec<Constraint> =
            cols.iter().map(|c| Constraint::Length(c.width)).collect();
        widths.extend(self.texts.iter().map(|t| Constraint::Min(t.1)));
        let t = Table::new(body, widths.clone())
            .header(Row::new(header))
            .block(
                Block::default()
                    .borders(Borders::TOP)
                    .title(Span::styled(self.title.as_str(), th.title)),
            );
        f.render_widget(t, area);
        let geom = (area.height >= 2).then(|| {
            let spans = super::procs::column_spans(&widths, area.width);
            let sorts = (cols.iter().map(|c| c.sort.map(Into::into)))
                .chain(self.texts.iter().map(|_| None));
            TableGeom {
                kind: TableKind::Sorted,
                x: area.x,
                width: area.width,
                header_y: area.y + 1,
                body_y: area.y + 2,
                rows: 0,
                first: 0,
                header: super::procs::header_cells(area.x, &spans, sorts),
            }
        });
        if rows.is_empty() && area.height > 2 {
            let r = Rect {
                y: area.y + 2,
                height: 1,
                ..area
            };
            f.render_widget(
                Paragraph::new(Span::styled(format!("  {}", self.empty), th.dim)),
                r,
            );
        }
        geom
    }
}
