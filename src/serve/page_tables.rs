//! The tables of an array's folder page, from the JSON files the tree serves: the schema
//! (`schema.json`: the array's type and orders, the dimensions and the attributes with
//! their types and filters) and the fragments (`array.json`), sortable by any column
//! without JavaScript: a column's heading links to the same page with `?sort=<column>&
//! order=asc|desc`, and the server sorts.

use serde_json::Value;

use super::html::{count, escape};
use crate::wire::path::encode;

/// Rows of the fragments table at most; the rest are counted, and `array.json` has them.
pub const MAX_ROWS: usize = 1000;

/// The sortable columns of the fragments table: the query's name and the heading.
const COLUMNS: [(&str, &str); 7] = [
    ("name", "Fragment"),
    ("t1", "First timestamp"),
    ("t2", "Last timestamp"),
    ("type", "Type"),
    ("version", "Format"),
    ("cells", "Cells"),
    ("size", "Bytes on disk"),
];

/// How the page was asked to sort the fragments.
#[derive(Debug, Clone, PartialEq)]
pub struct Sort {
    pub column: &'static str,
    pub descending: bool,
}

impl Sort {
    /// The `sort` and `order` of a query string; `None` (oldest first, as the array
    /// lists them) when there is none or it names no column.
    pub fn parse(query: Option<&str>) -> Option<Sort> {
        let mut column = None;
        let mut descending = false;
        for pair in query.unwrap_or("").split('&') {
            match pair.split_once('=') {
                Some(("sort", c)) => column = COLUMNS.iter().map(|(k, _)| *k).find(|k| *k == c),
                Some(("order", o)) => descending = o == "desc",
                _ => {}
            }
        }
        column.map(|column| Sort { column, descending })
    }
}

/// A filter pipeline as one line: `BYTESHUFFLE, ZSTD(level 3)`.
fn filters(pipeline: &Value) -> String {
    let list: Vec<String> = pipeline["filters"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| {
                    let kind = f["type"].as_str().unwrap_or("?");
                    let options: Vec<String> = f
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| *k != "type" && !v.is_null())
                        .map(|(k, v)| format!("{k} {}", plain(v)))
                        .collect();
                    match options.is_empty() {
                        true => kind.to_string(),
                        false => format!("{kind}({})", options.join(", ")),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    match list.is_empty() {
        true => "none".into(),
        false => list.join(", "),
    }
}

/// A JSON value as a cell shows it: strings without their quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// An attribute's fill value: text quoted (an empty or odd string shows), numbers,
/// NaN and the infinities plain.
fn fill(a: &Value) -> String {
    let text = a["datatype"]
        .as_str()
        .is_some_and(|t| t.starts_with("STRING") || t == "CHAR");
    match text {
        true => a["fill_value"].to_string(),
        false => plain(&a["fill_value"]),
    }
}

/// The schema's tables.
pub fn schema(s: &Value) -> String {
    let mut o = String::from("<h2 id=\"schema\">Schema</h2>\n<table class=\"facts\">\n");
    for (key, label) in [
        ("array_type", "type"),
        ("cell_order", "cell order"),
        ("tile_order", "tile order"),
        ("capacity", "capacity"),
        ("allows_dups", "duplicates allowed"),
        ("version", "schema version"),
    ] {
        o.push_str(&format!(
            "<tr><th>{label}</th><td>{}</td></tr>\n",
            escape(&plain(&s[key]))
        ));
    }
    o.push_str(&format!(
        "<tr><th>coordinate filters</th><td>{}</td></tr>\n<tr><th>offset filters</th><td>{}</td></tr>\n</table>\n",
        escape(&filters(&s["coords_filters"])),
        escape(&filters(&s["offsets_filters"]))
    ));
    o.push_str(
        "<h3>Dimensions</h3>\n<table class=\"grid\">\n<tr><th>Name</th><th>Type</th>\
         <th>Values per cell</th><th>Domain</th><th>Tile extent</th><th>Filters</th></tr>\n",
    );
    for d in s["dimensions"].as_array().into_iter().flatten() {
        o.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&plain(&d["name"])),
            escape(&plain(&d["datatype"])),
            escape(&plain(&d["cell_val_num"])),
            escape(&d["domain"].to_string()),
            escape(&plain(&d["tile_extent"])),
            escape(&filters(&d["filters"]))
        ));
    }
    o.push_str("</table>\n");
    o.push_str(
        "<h3>Attributes</h3>\n<table class=\"grid\">\n<tr><th>Name</th><th>Type</th>\
         <th>Values per cell</th><th>Nullable</th><th>Fill value</th><th>Enumeration</th>\
         <th>Filters</th></tr>\n",
    );
    for a in s["attributes"].as_array().into_iter().flatten() {
        o.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&plain(&a["name"])),
            escape(&plain(&a["datatype"])),
            escape(&plain(&a["cell_val_num"])),
            escape(&plain(&a["nullable"])),
            escape(&fill(a)),
            escape(&plain(&a["enumeration"])),
            escape(&filters(&a["filters"]))
        ));
    }
    o.push_str("</table>\n");
    o
}

/// One row of the fragments table.
struct Row<'a> {
    v: &'a Value,
}

impl Row<'_> {
    fn key(&self, column: &str) -> (u64, String) {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        match column {
            "t1" => (n(&self.v["timestamp_range"][0]), String::new()),
            "t2" => (n(&self.v["timestamp_range"][1]), String::new()),
            "version" => (n(&self.v["version"]), String::new()),
            "cells" => (n(&self.v["cell_count"]), String::new()),
            "size" => (n(&self.v["size_on_disk"]), String::new()),
            "type" => (0, plain(&self.v["type"])),
            _ => (0, plain(&self.v["name"])),
        }
    }
}

/// The fragments table of `array.json`, sorted as asked, with the folders it did not
/// show and why.
pub fn fragments(array: &Value, sort: Option<&Sort>) -> String {
    let list = array["fragments"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut rows: Vec<Row> = list.iter().map(|v| Row { v }).collect();
    if let Some(s) = sort {
        // Stable: equal keys keep the array's order (oldest first).
        rows.sort_by(|a, b| {
            let o = a.key(s.column).cmp(&b.key(s.column));
            if s.descending {
                o.reverse()
            } else {
                o
            }
        });
    }
    let mut o = format!(
        "<h2 id=\"fragments\">Fragments</h2>\n<p>{} live fragments, {} cells in all{}.</p>\n\
         <table class=\"grid sortable\">\n<tr>",
        count(list.len() as u64),
        count(array["total_cells"].as_u64().unwrap_or(0)),
        match sort {
            Some(s) => format!(
                ", sorted by {} ({}; <a href=\"?\">oldest first</a>)",
                s.column,
                if s.descending { "descending" } else { "ascending" }
            ),
            None => ", oldest first".into(),
        }
    );
    for (key, label) in COLUMNS {
        let current = sort.filter(|s| s.column == key);
        let (order, mark) = match current {
            Some(s) if !s.descending => ("desc", " ▲"),
            Some(_) => ("asc", " ▼"),
            None => ("asc", ""),
        };
        o.push_str(&format!(
            "<th><a href=\"?sort={key}&amp;order={order}\">{label}</a>{mark}</th>"
        ));
    }
    o.push_str("</tr>\n");
    for r in rows.iter().take(MAX_ROWS) {
        let v = r.v;
        let name = plain(&v["name"]);
        let cells = |key: &str| match v[key].as_u64() {
            Some(n) => count(n),
            None => String::new(),
        };
        if let Some(e) = v["error"].as_str() {
            o.push_str(&format!(
                "<tr><td>{}</td><td colspan=\"6\">unreadable: {}</td></tr>\n",
                escape(&name),
                escape(e)
            ));
            continue;
        }
        o.push_str(&format!(
            "<tr><td><a href=\"fragments/{}/\">{}</a></td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            encode(&name),
            escape(&name),
            plain(&v["timestamp_range"][0]),
            plain(&v["timestamp_range"][1]),
            escape(&plain(&v["type"])),
            plain(&v["version"]),
            cells("cell_count"),
            cells("size_on_disk"),
        ));
    }
    o.push_str("</table>\n");
    if rows.len() > MAX_ROWS {
        o.push_str(&format!(
            "<p>The first {} of {} rows; <a href=\"array.json\">array.json</a> has them all.</p>\n",
            count(MAX_ROWS as u64),
            count(rows.len() as u64)
        ));
    }
    let ignored = array["ignored"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !ignored.is_empty() {
        o.push_str(
            "<h3>Folders not shown</h3>\n<table class=\"grid\">\n<tr><th>Folder</th><th>Why</th></tr>\n",
        );
        for i in ignored.iter().take(MAX_ROWS) {
            o.push_str(&format!(
                "<tr><td>{}</td><td>{}</td></tr>\n",
                escape(&plain(&i["dir"])),
                escape(&plain(&i["reason"]))
            ));
        }
        o.push_str("</table>\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_query_names_a_column_and_an_order() {
        assert_eq!(
            Sort::parse(Some("sort=cells&order=desc")),
            Some(Sort {
                column: "cells",
                descending: true
            })
        );
        assert_eq!(Sort::parse(Some("sort=bogus")), None);
        assert_eq!(Sort::parse(None), None);
    }

    #[test]
    fn rows_sort_by_the_column_asked() {
        let array = json!({"total_cells": 30, "fragments": [
            {"name": "__1_1_a_22", "timestamp_range": [1, 1], "type": "dense", "version": 22,
             "cell_count": 20, "size_on_disk": 5},
            {"name": "__2_2_b_22", "timestamp_range": [2, 2], "type": "dense", "version": 22,
             "cell_count": 10, "size_on_disk": 7},
        ], "ignored": [{"dir": "__x", "reason": "uncommitted"}]});
        let html = fragments(&array, None);
        assert!(html.find("__1_1_a_22").unwrap() < html.find("__2_2_b_22").unwrap());
        let by_cells = Sort::parse(Some("sort=cells&order=asc"));
        let html = fragments(&array, by_cells.as_ref());
        assert!(html.find("__2_2_b_22").unwrap() < html.find("__1_1_a_22").unwrap());
        assert!(html.contains("?sort=cells&amp;order=desc\">Cells</a> ▲"));
        assert!(html.contains("uncommitted"));
        let schema = json!({"array_type": "dense", "dimensions": [{"name": "x<", "datatype": "INT32",
            "domain": [0, 9], "filters": {"filters": [{"type": "ZSTD", "level": 3}]}}],
            "attributes": [], "coords_filters": {"filters": []}});
        let html = super::schema(&schema);
        assert!(html.contains("<td>x&lt;</td><td>INT32</td>"));
        assert!(html.contains("ZSTD(level 3)"));
    }
}
