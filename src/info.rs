//! `fragfs info`: a readable summary of an array and its fragments.

use std::fmt::Write;

use crate::array::fragment::dir_size;
use crate::array::layout;
use crate::array::Array;
use crate::view::json::non_empty_domain;

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
        "  {:<48} {:>7} {:<6} {:>10} {:>10}  {:<27} non-empty domain",
        "name", "format", "type", "cells", "bytes", "timestamps"
    );
    for f in &array.fragments {
        let size = dir_size(&f.dir);
        match f.meta(&array.schemas) {
            Ok(m) => {
                versions.insert(m.footer.version);
                let _ = writeln!(
                    out,
                    "  {:<48} {:>7} {:<6} {:>10} {:>10}  {:<27} {}",
                    f.name,
                    m.footer.version,
                    if m.footer.dense { "dense" } else { "sparse" },
                    m.cell_count(),
                    size,
                    format!("{}..{}", f.timestamps.t1, f.timestamps.t2),
                    non_empty_domain(&m)
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
        "\nformat versions  fragments {:?}, schemas {:?}",
        versions,
        array
            .schemas
            .iter()
            .map(|s| s.schema.version)
            .collect::<std::collections::BTreeSet<_>>()
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
