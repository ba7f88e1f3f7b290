//! A readable account of how one fragment is laid out on disk. The layout changed with
//! almost every format version (`08-format-history.md`), and someone holding a
//! years-old array wants to know which of those layouts they are looking at.

use crate::format::name::NameGeneration;

use super::fragment::{Fragment, FragmentMeta};

/// E.g. `v3, root folder, footer at a computed offset, files named by field,
/// __coords.tdb split per tile`.
pub fn describe(fragment: &Fragment, meta: &FragmentMeta) -> String {
    let footer = &meta.footer;
    let v = footer.version;
    let mut parts = vec![format!("v{v}")];
    parts.push(
        if fragment.rel_dir.starts_with("__fragments/") {
            "__fragments/ folder"
        } else if fragment.timestamps.generation == NameGeneration::Three {
            "root folder + .ok"
        } else {
            "root folder"
        }
        .to_string(),
    );
    parts.push(meta.layout.describe().to_string());
    parts.push(
        match v {
            ..=7 => "files named by field",
            8 => "files named by percent-encoded field",
            _ => "files a<i>/d<j>",
        }
        .to_string(),
    );
    let coords = meta.fields.iter().find_map(|f| f.coords);
    parts.push(match coords {
        _ if footer.dense => "dense".to_string(),
        Some(c) => format!("__coords.tdb {}", c.layout.name()),
        None => "one file per dimension".to_string(),
    });
    if v >= 11 {
        parts.push("tile statistics".into());
    }
    if footer.has_timestamps {
        parts.push("timestamps".into());
    }
    if footer.has_delete_meta {
        parts.push("delete metadata".into());
    }
    if footer.processed_conditions_offset.is_some() {
        parts.push("processed conditions".into());
    }
    if !footer.global_order_min_offsets.is_empty() {
        parts.push("global-order bounds".into());
    }
    parts.join(", ")
}
