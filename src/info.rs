//! `fragfs info`: the summary a tree gathers ([`Info`]), rendered as text.

use std::fmt::Write;

use crate::view::info::{ArrayInfo, FiloInfo, GroupInfo, Info};
use crate::view::text::iso_ms;

pub fn render(info: &Info) -> String {
    match info {
        Info::Array(a) => render_array(a),
        Info::Group(g) => render_group(g),
        Info::Filo(f) => render_filo(f),
    }
}

fn render_array(a: &ArrayInfo) -> String {
    let mut out = String::new();
    let s = &a.schema;
    let _ = writeln!(out, "array      {}", a.location);
    let _ = writeln!(
        out,
        "schema     {} (format {}), {}, tile order {}, cell order {}, capacity {}{}",
        a.schema_file,
        s.version,
        if s.dense { "dense" } else { "sparse" },
        s.tile_order,
        s.cell_order,
        s.capacity,
        if s.allows_dups {
            ", duplicates allowed"
        } else {
            ""
        }
    );
    for d in &s.dimensions {
        let var = if d.cell_val_num.is_none() { " var" } else { "" };
        let _ = writeln!(out, "  dimension {} {}{var}", d.name, d.datatype);
    }
    for at in &s.attributes {
        let cvn = at.cell_val_num.map_or("var".to_string(), |n| n.to_string());
        let _ = writeln!(
            out,
            "  attribute {} {} x{}{} [{}]",
            at.name,
            at.datatype,
            cvn,
            if at.nullable { " nullable" } else { "" },
            at.filters.join(", ")
        );
    }
    if a.schema_count > 1 {
        let _ = writeln!(
            out,
            "schemas    {} files (schema evolution)",
            a.schema_count
        );
    }
    let mut versions = std::collections::BTreeSet::new();
    // Names are as wide as the widest one, so columns stay aligned whatever the names.
    let width = a
        .fragments
        .iter()
        .map(|f| f.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let _ = writeln!(out, "\nfragments  {} live", a.fragments.len());
    let _ = writeln!(
        out,
        "  {:<width$} {:>6} {:<24} {:<6} {:>10} {:>10}  non-empty domain",
        "name", "format", "written at (UTC)", "type", "cells", "bytes"
    );
    for f in &a.fragments {
        match &f.detail {
            Ok(d) => {
                versions.insert(d.format_version);
                let _ = writeln!(
                    out,
                    "  {:<width$} {:>6} {:<24} {:<6} {:>10} {:>10}  {}",
                    f.name,
                    d.format_version,
                    // The end of the timestamp range: a consolidated fragment covers
                    // writes from its start on, which footer.json shows.
                    iso_ms(f.written_ms),
                    if d.dense { "dense" } else { "sparse" },
                    d.cells,
                    d.bytes,
                    domain_text(&d.non_empty_domain)
                );
                let _ = writeln!(out, "      layout  {}", d.layout);
            }
            Err(e) => {
                let _ = writeln!(out, "  {:<width$} unreadable: {e}", f.name);
            }
        }
    }
    let _ = writeln!(
        out,
        "\nformat versions  fragments {}, schemas {}",
        list(&versions),
        list(&a.schema_versions)
    );
    if !a.deletes.is_empty() {
        let _ = writeln!(out, "\ndeletes    {}", a.deletes.len());
        for (commit, t, text) in &a.deletes {
            let shown = match text {
                Ok(c) => c.clone(),
                Err(e) => format!("unreadable: {e}"),
            };
            let _ = writeln!(out, "  at {t:<14} {shown}    ({commit})");
        }
    }
    match &a.metadata {
        Ok(m) if m.is_empty() => {}
        Ok(m) => {
            let _ = writeln!(out, "\nmetadata   {} keys", m.len());
            render_metadata(&mut out, m);
        }
        Err(e) => {
            let _ = writeln!(out, "\nmetadata   unreadable: {e}");
        }
    }
    if a.ignored.is_empty() {
        let _ = writeln!(out, "ignored    nothing");
    } else {
        let _ = writeln!(out, "ignored    {}", a.ignored.len());
        for (dir, reason) in &a.ignored {
            let _ = writeln!(out, "  {dir}: {reason}");
        }
    }
    out
}

fn render_metadata(out: &mut String, m: &[(String, &'static str, String)]) {
    let width = m.iter().map(|(k, ..)| k.chars().count()).max().unwrap_or(0);
    for (k, t, v) in m {
        let _ = writeln!(out, "  {k:<width$}  {t:<14} {v}");
    }
}

fn render_group(g: &GroupInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "group      {}", g.location);
    let _ = writeln!(out, "\nmembers    {}", g.members.len());
    let width = g
        .members
        .iter()
        .map(|m| m.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    for m in &g.members {
        let relative = if m.relative { "relative" } else { "absolute" };
        let shown = match &m.not_shown_because {
            None => String::new(),
            Some(why) => format!("  (not shown: {why})"),
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:<6} {relative} {}{shown}",
            m.name, m.kind, m.uri
        );
    }
    if !g.metadata.is_empty() {
        let _ = writeln!(out, "\nmetadata   {} keys", g.metadata.len());
        render_metadata(&mut out, &g.metadata);
    }
    out
}

fn render_filo(f: &FiloInfo) -> String {
    let mut out = format!(
        "filo       {} ({}), {} rows\n\n  {:<24} {:<10} {:<28} {:>10}  file\n",
        f.location, f.format_version, f.rows, "column", "type", "vector", "bytes"
    );
    for c in &f.columns {
        let vector = match &c.vector {
            Ok(kind) => kind.clone(),
            Err(e) => format!("unreadable: {e}"),
        };
        let _ = writeln!(
            out,
            "  {:<24} {:<10} {:<28} {:>10}  {}",
            c.name, c.column_type, vector, c.bytes, c.file
        );
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
