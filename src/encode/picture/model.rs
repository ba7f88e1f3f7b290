//! What a picture of an array's fragments shows: the description the view fills in
//! from metadata (names, timestamps, domains, visibility at the picture's time) and the
//! drawing turns into SVG. Nothing here knows a fragment on disk.

/// Where a fragment stands at the picture's time, by TileDB's rules (the view decides
/// it with the rules `latest/` and `at/<T>/` merge by).
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Visible: every cell is part of the array then.
    Live,
    /// Visible in part: opened inside its timestamp range, it shows only the cells
    /// stamped up to the picture's time.
    Partial,
    /// Hidden: a consolidation replaced it (it waits on disk for a vacuum); `by` is the
    /// consolidated fragment, `from` the time from which it stands in.
    Replaced { by: String, from: u64 },
    /// Hidden: written after the picture's time.
    Later,
}

impl Status {
    /// The element's classes (`fragment` and these): `live`, `partial`, or `hidden`
    /// with why (`replaced`, `later`).
    pub fn classes(&self) -> &'static str {
        match self {
            Status::Live => "live",
            Status::Partial => "partial",
            Status::Replaced { .. } => "hidden replaced",
            Status::Later => "hidden later",
        }
    }

    /// Whether the fragment is part of the array at the picture's time.
    pub fn visible(&self) -> bool {
        matches!(self, Status::Live | Status::Partial)
    }

    /// The line of the hover text that says so.
    pub fn words(&self, at: Option<u64>) -> String {
        let then = at.map_or("now".to_string(), |t| format!("at {t}"));
        match self {
            Status::Live => format!("live {then}"),
            Status::Partial => format!(
                "live in part {then}: opened inside its timestamp range, only its cells \
                 stamped up to then"
            ),
            Status::Replaced { by, from } => format!(
                "hidden {then}: replaced by the consolidated fragment {by} from {from} on \
                 (not vacuumed yet)"
            ),
            Status::Later => format!("hidden {then}: written after it"),
        }
    }
}

/// How the values along a drawn dimension are printed on its axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AxisKind {
    /// Integers (and datetimes, as their integer counts): cell `v` spans `[v, v + 1)`.
    Integer,
    Float,
    /// Strings, placed by their first 8 bytes read as a big-endian number (the order of
    /// the strings, up to those bytes).
    Text,
}

/// One drawn dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub kind: AxisKind,
    /// Where to mark the axis, with the labels (a text axis's ends, spelled exactly);
    /// empty: at round numbers.
    pub marks: Vec<(f64, String)>,
}

/// One fragment as the picture needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    pub name: String,
    pub t1: u64,
    pub t2: u64,
    pub status: Status,
    /// Set when a consolidation wrote it: what tells (a `.vac` file it left, or a
    /// timestamp range).
    pub consolidated: Option<String>,
    /// `dense` or `sparse`, when its metadata was read.
    pub kind: Option<&'static str>,
    pub cells: Option<u64>,
    pub bytes: Option<u64>,
    /// The non-empty domain as text, every dimension (`y [0, 7], x [0, 11]`).
    pub domain_text: String,
    /// Per drawn dimension (1 or 2), where the non-empty domain lies, in the axis's
    /// units (an integer cell's end is `hi + 1`). `None`: not placed (no domain, or
    /// unreadable metadata, said in `problem`).
    pub extent: Option<Vec<(f64, f64)>>,
    /// The tile MBRs of a sparse fragment, projected like `extent`.
    pub mbrs: Vec<Vec<(f64, f64)>>,
    /// Why the fragment is not drawn where it lies, if it is not.
    pub problem: Option<String>,
}

/// A delete or update commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub timestamp: u64,
    /// `delete` or `update`.
    pub kind: &'static str,
    /// The condition as the user wrote it, or why it cannot be read.
    pub text: String,
    pub commit: String,
    /// Whether it applies at the picture's time.
    pub applied: bool,
}

/// The whole picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Picture {
    /// `None`: now (`latest/`, the array's root); else `at/<T>/`'s T.
    pub at: Option<u64>,
    /// The drawn dimensions: the first one or two.
    pub axes: Vec<Axis>,
    /// The names of the dimensions past the second, which the picture flattens.
    pub others: Vec<String>,
    /// Oldest first, as TileDB orders them (first timestamp, then name).
    pub fragments: Vec<Fragment>,
    pub conditions: Vec<Condition>,
    /// Lines the view adds to the caption (what it left out, and why).
    pub notes: Vec<String>,
}
