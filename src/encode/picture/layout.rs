//! Where everything of a fragment picture goes, in pixels: the plot of the domain (one
//! shape per fragment, or per group of fragments that would overlap into a blur), its
//! axes, and the time strip below it. [`super::draw`] writes what this decides.

use std::collections::HashMap;

use super::super::colormap::viridis;
use super::model::{AxisKind, Fragment, Picture};
use super::scale::{count, iso, ticks, Scale};

/// The picture's width in pixels.
pub const WIDTH: f64 = 960.0;
/// The plot's left and right edges (room for the vertical axis's labels on the left).
pub const LEFT: f64 = 120.0;
pub const RIGHT: f64 = 930.0;
/// The plot's top edge (room for the heading above).
pub const TOP: f64 = 80.0;
/// Placed fragments up to this many are drawn one shape each; more are grouped where
/// they would fall on the same few pixels (and the picture says so).
pub const AGGREGATE_ABOVE: usize = 1_000;
/// At most this many shapes in the plot: groups are made coarser until they fit.
pub const MAX_SHAPES: usize = 4_000;
/// At most this many tile MBR outlines in all (they are drawn only when the fragments
/// are drawn one by one).
pub const MAX_MBRS: usize = 20_000;
/// Up to this many fragments, each is named inside its shape where it fits.
const LABELLED: usize = 24;
/// Buckets of the time strip's histogram.
const TIME_BUCKETS: usize = 200;
/// Deletes and updates drawn one marker each up to this many; more share a marker per
/// bucket of time.
const MAX_CONDITION_MARKS: usize = 400;

/// One shape of the plot: a fragment, or a group of them.
pub struct Shape {
    /// `fragment live`, `fragment hidden replaced consolidated`, `fragments live` (a
    /// group)...
    pub classes: String,
    pub colour: [u8; 3],
    /// `x, y, width, height`; `None` for a fragment that could not be placed (its
    /// element holds only its hover text).
    pub rect: Option<[f64; 4]>,
    pub title: String,
    /// The outlines of its tile MBRs, as SVG path data (empty when none are drawn).
    pub mbrs: String,
    /// Text written inside it, where there is room.
    pub label: Option<String>,
}

/// One axis of the plot: its name, the pixels and labels of its marks.
pub struct AxisMarks {
    pub name: String,
    pub marks: Vec<(f64, String)>,
}

/// A bar of the time strip, or a delete's marker.
pub struct Mark {
    pub classes: String,
    pub colour: [u8; 3],
    pub rect: [f64; 4],
    pub title: String,
}

pub struct Layout {
    pub height: f64,
    /// `x, y, width, height` of the plot.
    pub plot: [f64; 4],
    /// Across the page (below the plot), and down it (left of it).
    pub across: AxisMarks,
    pub down: AxisMarks,
    pub shapes: Vec<Shape>,
    /// Where the time strip's bars stand (their baseline) and its axis's marks.
    pub strip_top: f64,
    pub strip_base: f64,
    pub time_marks: Vec<(f64, String)>,
    pub bars: Vec<Mark>,
    pub conditions: Vec<Mark>,
    /// The picture's time on the strip (`at/<T>/`), at its pixel.
    pub at_mark: Option<(f64, String)>,
    /// The colour scale of time: the first and last timestamps.
    pub times: (u64, u64),
    /// What the caption says about how the plot was drawn.
    pub notes: Vec<String>,
}

/// Pixels as SVG text: one decimal is plenty, and keeps the bytes the same everywhere.
pub fn px(v: f64) -> String {
    let v = (v * 10.0).round() / 10.0;
    let v = if v == 0.0 { 0.0 } else { v };
    format!("{v}")
}

/// The layout of `p`.
pub fn layout(p: &Picture) -> Layout {
    let mut notes = Vec::new();
    let (t_lo, t_hi) = time_range(p);
    let colour_of = |t: u64| viridis(fraction(t, t_lo, t_hi));
    let placed: Vec<&Fragment> = p.fragments.iter().filter(|f| f.extent.is_some()).collect();
    let two_d = p.axes.len() >= 2;
    let aggregate = placed.len() > AGGREGATE_ABOVE;
    let bounds = |d: usize| {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for f in &placed {
            if let Some((a, b)) = f.extent.as_ref().and_then(|e| e.get(d)) {
                lo = lo.min(*a);
                hi = hi.max(*b);
            }
        }
        if lo > hi {
            (0.0, 1.0)
        } else {
            (lo, hi)
        }
    };
    let width = RIGHT - LEFT;
    // The plot's height: a 2-D plot keeps the domain's aspect where it is reasonable;
    // a 1-D plot has a row per fragment (or per band of them).
    let height = if two_d {
        let ((y0, y1), (x0, x1)) = (bounds(0), bounds(1));
        let numeric = p.axes.iter().take(2).all(|a| a.kind != AxisKind::Text);
        let ratio = (y1 - y0) / (x1 - x0);
        match numeric && ratio.is_finite() && ratio > 0.0 {
            true => (width * ratio).clamp(160.0, 600.0),
            false => 420.0,
        }
    } else if aggregate {
        560.0
    } else {
        (placed.len() as f64 * 24.0).clamp(120.0, 560.0)
    };
    let plot = [LEFT, TOP, width, height];
    let across_dim = if two_d { 1 } else { 0 };
    let (a0, a1) = bounds(across_dim);
    let sx = Scale::new(a0, a1, LEFT, RIGHT);
    let (d0, d1) = if two_d { bounds(0) } else { (0.0, 1.0) };
    let sy = Scale::new(d0, d1, TOP, TOP + height);
    let axis_marks = |d: usize, scale: &Scale| -> AxisMarks {
        let Some(axis) = p.axes.get(d) else {
            return AxisMarks {
                name: String::new(),
                marks: Vec::new(),
            };
        };
        let marks = if !axis.marks.is_empty() {
            axis.marks.clone()
        } else {
            let integer = axis.kind == AxisKind::Integer;
            // An integer cell v spans [v, v + 1): its label sits in its middle.
            let half = if integer { 0.5 } else { 0.0 };
            let (lo, hi) = (scale.d0, scale.d1 - if integer { 1.0 } else { 0.0 });
            ticks(lo, hi, 6, integer)
                .into_iter()
                .map(|(v, l)| (v + half, l))
                .collect()
        };
        AxisMarks {
            name: axis.name.clone(),
            marks: marks.into_iter().map(|(v, l)| (scale.at(v), l)).collect(),
        }
    };
    let across = axis_marks(across_dim, &sx);
    let down = if two_d {
        axis_marks(0, &sy)
    } else {
        AxisMarks {
            name: "fragments, oldest first".into(),
            marks: Vec::new(),
        }
    };
    // Each placed fragment's rectangle, in pixels.
    let row = if two_d || placed.is_empty() {
        0.0
    } else {
        height / placed.len() as f64
    };
    let rect_of = |rank: usize, e: &[(f64, f64)]| -> [f64; 4] {
        let (x0, x1) = (sx.at(e[across_dim].0), sx.at(e[across_dim].1));
        let (y0, y1) = if two_d {
            (sy.at(e[0].0), sy.at(e[0].1))
        } else {
            let y = TOP + rank as f64 * row;
            (y + row * 0.1, y + row * 0.9)
        };
        widen([x0, y0, x1 - x0, y1 - y0])
    };
    let mut shapes = Vec::new();
    if aggregate {
        shapes = groups(p, &placed, two_d, height, &sx, &sy);
        notes.push(format!(
            "{} fragments are drawn as {} shapes: fragments that would fall on the same \
             few pixels, with the same standing, are drawn as one (its hover text counts \
             them); tile MBRs are not drawn",
            count(placed.len() as u64),
            count(shapes.len() as u64)
        ));
    } else {
        let mut mbrs_left = MAX_MBRS;
        let mut skipped_mbrs = 0usize;
        for (rank, f) in placed.iter().enumerate() {
            let Some(e) = f.extent.as_deref() else {
                continue;
            };
            let mut mbrs = String::new();
            if f.mbrs.len() <= mbrs_left {
                mbrs_left -= f.mbrs.len();
                for m in &f.mbrs {
                    if m.len() == e.len() {
                        let [x, y, w, h] = rect_of(rank, m);
                        mbrs.push_str(&format!(
                            "M{} {}h{}v{}h-{}z",
                            px(x),
                            px(y),
                            px(w),
                            px(h),
                            px(w)
                        ));
                    }
                }
            } else {
                skipped_mbrs += 1;
            }
            let rect = rect_of(rank, e);
            // Few fragments: each named where there is room (the start of its name).
            let label = (placed.len() <= LABELLED && rect[2] >= 90.0 && rect[3] >= 14.0)
                .then(|| short_name(&f.name));
            shapes.push(Shape {
                classes: classes(f),
                colour: colour_of(f.t2),
                rect: Some(rect),
                title: title(f, p.at),
                mbrs,
                label,
            });
        }
        if skipped_mbrs > 0 {
            notes.push(format!(
                "the tile MBRs of {} fragments are not drawn (over {} outlines in all)",
                count(skipped_mbrs as u64),
                count(MAX_MBRS as u64)
            ));
        }
    }
    // Fragments without a place: an element with their hover text, no shape.
    let unplaced: Vec<&Fragment> = p.fragments.iter().filter(|f| f.extent.is_none()).collect();
    if !unplaced.is_empty() {
        notes.push(format!(
            "{} fragments are not drawn: they have no non-empty domain to place, or \
             their metadata could not be read (their hover text says why)",
            count(unplaced.len() as u64)
        ));
    }
    for f in unplaced {
        shapes.push(Shape {
            classes: classes(f),
            colour: colour_of(f.t2),
            rect: None,
            title: title(f, p.at),
            mbrs: String::new(),
            label: None,
        });
    }
    if !p.others.is_empty() {
        notes.push(format!(
            "dimensions past the second ({}) are flattened: each fragment is drawn over \
             its extent in the first two",
            p.others.join(", ")
        ));
    }
    let strip_top = TOP + height + 56.0;
    let strip_base = strip_top + 44.0;
    // A margin at both ends, so the first and last bars stand clear of the frame.
    let pad = match t_hi > t_lo {
        true => (t_hi - t_lo) as f64 * 0.03,
        false => 0.5,
    };
    let st = Scale::new(t_lo as f64 - pad, t_hi as f64 + pad, LEFT, RIGHT);
    let time_marks = ticks(t_lo as f64, t_hi as f64, 6, true)
        .into_iter()
        .map(|(v, l)| (st.at(v), l))
        .collect();
    let bars = time_bars(p, &st, strip_top, strip_base, &colour_of);
    let conditions = condition_marks(p, &st, strip_base + 6.0);
    let at_mark = p.at.map(|t| (st.at(t as f64), format!("T = {t}")));
    Layout {
        height: strip_base + 128.0 + 16.0 * notes.len() as f64,
        plot,
        across,
        down,
        shapes,
        strip_top,
        strip_base,
        time_marks,
        bars,
        conditions,
        at_mark,
        times: (t_lo, t_hi),
        notes,
    }
}

/// The start of a fragment's name: its timestamps and the first digits of its UUID
/// (`__1_1_1ed4e2af…`), which tell it from its neighbours.
fn short_name(name: &str) -> String {
    let parts: Vec<&str> = name.splitn(4, '_').collect();
    match parts.as_slice() {
        ["", "", t1, rest] => {
            let (t2, uuid) = rest.split_once('_').unwrap_or((rest, ""));
            let uuid: String = uuid.chars().take(8).collect();
            format!("__{t1}_{t2}_{uuid}…")
        }
        _ => name.chars().take(20).collect(),
    }
}

/// A rectangle at least 2 pixels wide and high (a single value, or a tiny fragment of a
/// large domain, stays visible), grown about its middle.
fn widen([x, y, w, h]: [f64; 4]) -> [f64; 4] {
    let (x, w) = if w < 2.0 {
        (x + w / 2.0 - 1.0, 2.0)
    } else {
        (x, w)
    };
    let (y, h) = if h < 2.0 {
        (y + h / 2.0 - 1.0, 2.0)
    } else {
        (y, h)
    };
    [x, y, w, h]
}

/// The first and last timestamps the picture shows (fragments, deletes; the picture's
/// time is marked, not spanned: `at/<T>` of a huge T must not squash the strip).
fn time_range(p: &Picture) -> (u64, u64) {
    let times = p
        .fragments
        .iter()
        .flat_map(|f| [f.t1, f.t2])
        .chain(p.conditions.iter().map(|c| c.timestamp));
    let (lo, hi) = times.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if lo > hi {
        (0, 1)
    } else {
        (lo, hi)
    }
}

/// Where `t` lies between `lo` and `hi`, 0 to 1 (a single time: 1, the newest colour).
pub fn fraction(t: u64, lo: u64, hi: u64) -> f64 {
    if hi <= lo {
        return 1.0;
    }
    (t.saturating_sub(lo)) as f64 / (hi - lo) as f64
}

fn classes(f: &Fragment) -> String {
    let mut c = format!("fragment {}", f.status.classes());
    if f.consolidated.is_some() {
        c.push_str(" consolidated");
    }
    c
}

/// A fragment's hover text: name, standing, times, domain, size.
fn title(f: &Fragment, at: Option<u64>) -> String {
    let mut lines = vec![f.name.clone(), f.status.words(at)];
    if let Some(why) = &f.consolidated {
        lines.push(format!("consolidated: {why}"));
    }
    lines.push(format!(
        "timestamps {} to {} ({} to {})",
        f.t1,
        f.t2,
        iso(f.t1),
        iso(f.t2)
    ));
    lines.push(format!("non-empty domain: {}", f.domain_text));
    let mut facts = Vec::new();
    if let Some(k) = f.kind {
        facts.push(k.to_string());
    }
    if let Some(c) = f.cells {
        facts.push(format!("{} cells", count(c)));
    }
    if let Some(b) = f.bytes {
        facts.push(format!("{} bytes on disk", count(b)));
    }
    if !f.mbrs.is_empty() {
        facts.push(format!("{} tiles", count(f.mbrs.len() as u64)));
    }
    if !facts.is_empty() {
        lines.push(facts.join(", "));
    }
    if let Some(problem) = &f.problem {
        lines.push(problem.clone());
    }
    lines.join("\n")
}

/// What a group of fragments drawn as one has seen of them.
struct Group {
    classes: String,
    rect: [f64; 4],
    fragments: u64,
    first: String,
    last: String,
    t1: u64,
    t2: u64,
    cells: u64,
    bytes: u64,
    time_sum: f64,
}

/// The shapes of many fragments: those that fall on the same cells of a grid over the
/// plot (`q` cells across, as many down; a 1-D plot's rows in as many bands), with the
/// same classes, are one shape; the grid is made coarser until [`MAX_SHAPES`] hold them.
fn groups(
    p: &Picture,
    placed: &[&Fragment],
    two_d: bool,
    height: f64,
    sx: &Scale,
    sy: &Scale,
) -> Vec<Shape> {
    let (t_lo, t_hi) = time_range(p);
    let across_dim = usize::from(two_d);
    let mut q = 512usize;
    loop {
        let cell = |v: f64, p0: f64, len: f64| ((v - p0) / len * q as f64).floor() as i64;
        let mut index: HashMap<(String, [i64; 4]), usize> = HashMap::new();
        let mut out: Vec<Group> = Vec::new();
        for (rank, f) in placed.iter().enumerate() {
            let Some(e) = f.extent.as_deref() else {
                continue;
            };
            let (x0, x1) = (sx.at(e[across_dim].0), sx.at(e[across_dim].1));
            let (y0, y1) = if two_d {
                (sy.at(e[0].0), sy.at(e[0].1))
            } else {
                let band = rank * q / placed.len();
                let h = height / q as f64;
                let y = TOP + band as f64 * h;
                (y, y + h)
            };
            let w = RIGHT - LEFT;
            let key = [
                cell(x0, LEFT, w),
                cell(x1, LEFT, w),
                cell(y0, TOP, height),
                cell(y1, TOP, height),
            ];
            let c = classes(f).replacen("fragment ", "fragments ", 1);
            let i = *index.entry((c.clone(), key)).or_insert_with(|| {
                out.push(Group {
                    classes: c,
                    rect: [x0, y0, x1, y1],
                    fragments: 0,
                    first: f.name.clone(),
                    last: f.name.clone(),
                    t1: f.t1,
                    t2: f.t2,
                    cells: 0,
                    bytes: 0,
                    time_sum: 0.0,
                });
                out.len() - 1
            });
            let g = &mut out[i];
            g.fragments += 1;
            g.last = f.name.clone();
            g.rect = [
                g.rect[0].min(x0),
                g.rect[1].min(y0),
                g.rect[2].max(x1),
                g.rect[3].max(y1),
            ];
            g.t1 = g.t1.min(f.t1);
            g.t2 = g.t2.max(f.t2);
            g.cells = g.cells.saturating_add(f.cells.unwrap_or(0));
            g.bytes = g.bytes.saturating_add(f.bytes.unwrap_or(0));
            g.time_sum += fraction(f.t2, t_lo, t_hi);
        }
        if out.len() <= MAX_SHAPES || q <= 8 {
            return out
                .into_iter()
                .map(|g| {
                    let mean = g.time_sum / g.fragments as f64;
                    let status = g.classes.trim_start_matches("fragments ").to_string();
                    let title = format!(
                        "{} fragments drawn as one ({status}): they would overlap into a \
                         blur\nfrom {} to {}\ntimestamps {} to {} ({} to {})\n{} cells, {} \
                         bytes on disk in all",
                        count(g.fragments),
                        g.first,
                        g.last,
                        g.t1,
                        g.t2,
                        iso(g.t1),
                        iso(g.t2),
                        count(g.cells),
                        count(g.bytes)
                    );
                    let [x0, y0, x1, y1] = g.rect;
                    Shape {
                        classes: g.classes,
                        colour: viridis(mean),
                        rect: Some(widen([x0, y0, x1 - x0, y1 - y0])),
                        title,
                        mbrs: String::new(),
                        label: None,
                    }
                })
                .collect();
        }
        q /= 2;
    }
}

/// The time strip's histogram: how many fragments end in each bucket of time, a bar
/// each (height by the logarithm of the count), coloured by the bucket's time.
fn time_bars(
    p: &Picture,
    st: &Scale,
    top: f64,
    base: f64,
    colour_of: &dyn Fn(u64) -> [u8; 3],
) -> Vec<Mark> {
    let (lo, hi) = (st.d0, st.d1);
    let bucket_of = |t: u64| {
        let x = (t as f64 - lo) / (hi - lo) * TIME_BUCKETS as f64;
        (x.floor().max(0.0) as usize).min(TIME_BUCKETS - 1)
    };
    let mut buckets: Vec<(u64, u64, u64, u64)> = vec![(0, u64::MAX, 0, 0); TIME_BUCKETS];
    for f in &p.fragments {
        let b = &mut buckets[bucket_of(f.t2)];
        b.0 += 1;
        b.1 = b.1.min(f.t2);
        b.2 = b.2.max(f.t2);
        b.3 += u64::from(f.status.visible());
    }
    let most = buckets.iter().map(|b| b.0).max().unwrap_or(0).max(1);
    let w = (RIGHT - LEFT) / TIME_BUCKETS as f64;
    buckets
        .iter()
        .enumerate()
        .filter(|(_, b)| b.0 > 0)
        .map(|(i, &(n, first, last, visible))| {
            let h = 6.0 + (base - top - 6.0) * ((n as f64).ln_1p() / (most as f64).ln_1p());
            let when = if first == last {
                format!("at {first} ({})", iso(first))
            } else {
                format!("from {first} to {last} ({} to {})", iso(first), iso(last))
            };
            let x = st.at(first as f64).min(LEFT + i as f64 * w);
            Mark {
                classes: "written".into(),
                colour: colour_of(last),
                rect: [x, base - h, w.max(2.0), h],
                title: format!(
                    "{} fragments written {when} ({} of them visible in this picture)",
                    count(n),
                    count(visible)
                ),
            }
        })
        .collect()
}

/// A marker per delete or update below the strip (one per bucket of time when there
/// are many), its hover text the condition.
fn condition_marks(p: &Picture, st: &Scale, y: f64) -> Vec<Mark> {
    let kind = |applied: bool| {
        if applied {
            "condition applied"
        } else {
            "condition later"
        }
    };
    if p.conditions.len() <= MAX_CONDITION_MARKS {
        return p
            .conditions
            .iter()
            .map(|c| Mark {
                classes: format!("{} {}", c.kind, kind(c.applied)),
                colour: [200, 30, 30],
                rect: [st.at(c.timestamp as f64) - 4.0, y, 8.0, 8.0],
                title: format!(
                    "{} at {} ({}): {}\n{}\n{}",
                    c.kind,
                    c.timestamp,
                    iso(c.timestamp),
                    c.text,
                    c.commit,
                    if c.applied {
                        "applied in this picture"
                    } else {
                        "after this picture's time: not applied"
                    }
                ),
            })
            .collect();
    }
    let mut by_px: Vec<(i64, Vec<usize>)> = Vec::new();
    for (i, c) in p.conditions.iter().enumerate() {
        let k = (st.at(c.timestamp as f64) / 8.0).floor() as i64;
        match by_px.last_mut() {
            Some((last, members)) if *last == k => members.push(i),
            _ => by_px.push((k, vec![i])),
        }
    }
    by_px
        .into_iter()
        .map(|(k, members)| {
            let cs: Vec<_> = members.iter().map(|&i| &p.conditions[i]).collect();
            let shown: Vec<String> = cs
                .iter()
                .take(5)
                .map(|c| format!("{} at {}: {}", c.kind, c.timestamp, c.text))
                .collect();
            let applied = cs.iter().all(|c| c.applied);
            Mark {
                classes: format!("conditions {}", kind(applied)),
                colour: [200, 30, 30],
                rect: [k as f64 * 8.0, y, 8.0, 8.0],
                title: format!(
                    "{} deletes and updates drawn as one\n{}{}",
                    count(cs.len() as u64),
                    shown.join("\n"),
                    if cs.len() > 5 { "\n..." } else { "" }
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixels_print_the_same_everywhere() {
        assert_eq!(px(1.25), "1.3");
        assert_eq!(px(-0.01), "0");
        assert_eq!(px(12.0), "12");
    }

    #[test]
    fn small_rectangles_stay_visible() {
        assert_eq!(widen([10.0, 10.0, 0.0, 5.0]), [9.0, 10.0, 2.0, 5.0]);
    }
}
