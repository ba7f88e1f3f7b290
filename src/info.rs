//! `fragfs info`: a readable summary of an array and its fragments.

use std::fmt::Write;

use crate::array::fragment::dir_size;
use crate::array::layout;
use crate::array::Array;
use crate::view::json::non_empty_domain;
use crate::view::text::iso_ms;

pub fn render(array: &Array) -> String {
    let mut out = String::new();
    let latest = array.latest_schema();
    let s = &latest.schema;
    let _ = writeln!(out, "array      {}", array.root.display());
    let _ = writeln!(
        out,
        "schema     {} (format {}), {}, tile order {}, cell order {}, capacity {}{}",
        latest.rel_path,
        s.version,
        if s.array_type == crate::format::schema::ArrayType::Dense {
            "dense"
        } else {
            "sparse"
        },
        s.tile_order.name(),
        s.cell_order.name(),
        s.capacity,
        if s.allows_dups {
            ", duplicates allowed"
        } else {
            ""
        }
    );
    for d in &s.dimensions {
        let _ = writeln!(
            out,
            "  dimension {} {}{}",
            d.name,
            d.datatype.name(),
            if d.is_var() { " var" } else { "" }
        );
    }
    for a in &s.attributes {
        let cvn = if a.is_var() {
            "var".to_string()
        } else {
            a.cell_val_num.to_string()
        };
        let filters: Vec<&str> = a.filters.filters.iter().map(|f| f.name()).collect();
        let _ = writeln!(
            out,
            "  attribute {} {} x{}{} [{}]",
            a.name,
            a.datatype.name(),
            cvn,
            if a.nullable { " nullable" } else { "" },
            filters.join(", ")
        );
    }
    if array.schemas.len() > 1 {
        let _ = writeln!(
            out,
            "schemas    {} files (schema evolution)",
            array.schemas.len()
        );
    }
    let mut versions = std::collections::BTreeSet::new();
    let _ = writeln!(out, "\nfragments  {} live", array.fragments.len());
    let _ = writeln!(
        out,
        "  {:<48} {:>6} {:<24} {:<6} {:>10} {:>10}  non-empty domain",
        "name", "format", "written at (UTC)", "type", "cells", "bytes"
    );
    for f in &array.fragments {
        let size = dir_size(&f.dir);
        match f.meta(&array.schemas) {
            Ok(m) => {
                versions.insert(m.footer.version);
                let _ = writeln!(
                    out,
                    "  {:<48} {:>6} {:<24} {:<6} {:>10} {:>10}  {}",
                    f.name,
                    m.footer.version,
                    // The end of the timestamp range: a consolidated fragment covers writes from
                    // its start on, which footer.json shows.
                    iso_ms(f.timestamps.t2),
                    if m.footer.dense { "dense" } else { "sparse" },
                    m.cell_count(),
                    size,
                    domain_text(&non_empty_domain(&m))
                );
                let _ = writeln!(out, "      layout  {}", layout::describe(f, &m));
            }
            Err(e) => {
                let _ = writeln!(out, "  {:<48} unreadable: {e}", f.name);
            }
        }
    }
    let _ = writeln!(
        out,
        "\nformat versions  fragments {}, schemas {}",
        list(&versions),
        list(&array.schemas.iter().map(|s| s.schema.version).collect())
    );
    if !array.conditions.is_empty() {
        let _ = writeln!(
            out,
            "delete/update conditions  {}",
            array.conditions.join(", ")
        );
    }
    if array.ignored.is_empty() {
        let _ = writeln!(out, "ignored    nothing");
    } else {
        let _ = writeln!(out, "ignored    {}", array.ignored.len());
        for i in &array.ignored {
            let _ = writeln!(out, "  {}: {}", i.rel_dir, i.reason);
        }
    }
    out
}

/// `[[0, 7], [0, 11]]` as `0..7, 0..11`.
fn domain_text(domain: &serde_json::Value) -> String {
    let show = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    match domain.as_array() {
        Some(dims) => dims
            .iter()
            .map(|d| match d.as_array().map(|r| r.as_slice()) {
                Some([lo, hi]) => format!("{}..{}", show(lo), show(hi)),
                _ => show(d),
            })
            .collect::<Vec<_>>()
            .join(", "),
        None => show(domain),
    }
}

/// `{8, 22}` as `8, 22`.
fn list(versions: &std::collections::BTreeSet<u32>) -> String {
    let shown: Vec<String> = versions.iter().map(u32::to_string).collect();
    shown.join(", ")
}
