//! Delete and update conditions: the payloads of `__commits/*.del` and `*.upd` (format
//! 16+; `01-array-layout.md` §6, TileDB `format_spec/delete_commit_file.md`,
//! `update_commit_file.md`, `tiledb/sm/query/deletes_and_updates/serialization.cc`,
//! `tiledb/sm/query/ast/query_ast.cc`, `tiledb/sm/query/query_condition.cc`).
//!
//! The payload is a query-condition tree in pre-order:
//! * value node: `u8` node type 1, `u8` operator, `u32` field-name length + name,
//!   `u64` value length + value, and for IN / NOT_IN only, `u64` offsets length +
//!   offsets (`u64` byte offsets of the set members in the value);
//! * expression node: `u8` node type 0, `u8` combination (AND 0, OR 1, NOT 2), `u64`
//!   child count, then the children.
//!
//! A `.upd` payload continues after the tree with `u64` value count and per value a
//! `u64` field-name length + name and a `u64` value length + value.
//!
//! One layout since format 16 (TileDB 2.12): IN and NOT_IN, and with them the offsets
//! field, arrived in TileDB 2.17, and older files cannot hold those operators.
//!
//! TileDB stores the **negation** of the condition the user gave to the delete (it
//! keeps the cells the stored tree matches; `DeletesAndUpdates::dowork` writes
//! `negated_condition()`). [`Condition::negated`] undoes that with TileDB's own rules
//! (`get_negated_tree`): operators flip (`<` ↔ `>=`, `>` ↔ `<=`, `=` ↔ `!=`, IN ↔
//! NOT IN) and AND ↔ OR, so the result is the user's condition in the normal form
//! TileDB keeps it in — a `not (...)` the user wrote was already pushed into the
//! operators when the condition was built (`QueryCondition::negate`), so no NOT node is
//! ever stored.

use super::datatype::{decode_int, Datatype};
use super::error::{FormatError, Result};
use super::reader::Reader;

/// Deepest nesting accepted. TileDB builds flat trees (combining conditions with the
/// same operator merges their children), so real trees are shallow; the limit keeps a
/// hostile file from exhausting the stack.
pub const MAX_DEPTH: usize = 256;

/// Smallest serialized node: an expression node with its child count.
const MIN_NODE_LEN: u64 = 1 + 1 + 8;

/// A comparison operator (`QueryConditionOp`, `02-enums.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
    /// Internal results of rewriting a condition against a schema (e.g. a null test on
    /// a non-nullable attribute); TileDB's deserializer accepts them, its writers never
    /// store them.
    AlwaysTrue,
    AlwaysFalse,
}

impl Op {
    pub fn from_id(id: u8) -> Option<Op> {
        Some(match id {
            0 => Op::Lt,
            1 => Op::Le,
            2 => Op::Gt,
            3 => Op::Ge,
            4 => Op::Eq,
            5 => Op::Ne,
            6 => Op::In,
            7 => Op::NotIn,
            253 => Op::AlwaysTrue,
            254 => Op::AlwaysFalse,
            _ => return None,
        })
    }

    pub fn id(self) -> u8 {
        match self {
            Op::Lt => 0,
            Op::Le => 1,
            Op::Gt => 2,
            Op::Ge => 3,
            Op::Eq => 4,
            Op::Ne => 5,
            Op::In => 6,
            Op::NotIn => 7,
            Op::AlwaysTrue => 253,
            Op::AlwaysFalse => 254,
        }
    }

    /// TileDB's `negate_query_condition_op`. TileDB throws for ALWAYS_TRUE/FALSE
    /// ("Invalid negation of rewritten query"); they are swapped here, which is their
    /// logical negation.
    pub fn negated(self) -> Op {
        match self {
            Op::Lt => Op::Ge,
            Op::Ge => Op::Lt,
            Op::Gt => Op::Le,
            Op::Le => Op::Gt,
            Op::Eq => Op::Ne,
            Op::Ne => Op::Eq,
            Op::In => Op::NotIn,
            Op::NotIn => Op::In,
            Op::AlwaysTrue => Op::AlwaysFalse,
            Op::AlwaysFalse => Op::AlwaysTrue,
        }
    }

    /// IN or NOT IN: the value is a set, with offsets.
    pub fn is_set(self) -> bool {
        matches!(self, Op::In | Op::NotIn)
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::In => "IN",
            Op::NotIn => "NOT IN",
            Op::AlwaysTrue => "TRUE",
            Op::AlwaysFalse => "FALSE",
        }
    }
}

/// How an expression node combines its children (`QueryConditionCombinationOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combination {
    And,
    Or,
    /// Accepted by TileDB's deserializer but never written: TileDB cannot negate a NOT
    /// node, and every stored tree is a negated one.
    Not,
}

/// A comparison of one field with a value.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueNode {
    pub op: Op,
    /// The attribute or dimension name.
    pub field: String,
    /// The value's bytes as the client gave them: one element of the field's type, a
    /// string's bytes, or for IN / NOT IN the members back to back. Empty for a null
    /// test (see [`ValueNode::is_null_test`]).
    pub value: Vec<u8>,
    /// IN / NOT IN only: where each member starts in `value`; empty otherwise.
    pub offsets: Vec<u64>,
}

impl ValueNode {
    /// `field IS NULL` (EQ) or `field IS NOT NULL` (NE).
    ///
    /// TileDB writes a null test as an EQ/NE node with an empty value. A comparison with
    /// the empty string is written the same way, so the two cannot be told apart on
    /// disk; this reads both as null tests. (TileDB itself loses the distinction the
    /// other way: its deserializer hands the node a non-null pointer to zero bytes, so
    /// the condition it reads back is the empty-value comparison.)
    pub fn is_null_test(&self) -> bool {
        matches!(self.op, Op::Eq | Op::Ne) && self.value.is_empty()
    }

    /// The members of an IN / NOT IN set, in stored order: member `i` runs from
    /// `offsets[i]` to `offsets[i + 1]`, the last to the end of the value. `None` when
    /// the offsets do not fit the value (only possible for a hand-built node).
    pub fn members(&self) -> Option<Vec<&[u8]>> {
        let end = self.value.len() as u64;
        self.offsets
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let stop = self.offsets.get(i + 1).copied().unwrap_or(end);
                let range = usize::try_from(start).ok()?..usize::try_from(stop).ok()?;
                self.value.get(range)
            })
            .collect()
    }
}

/// A condition tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Value(ValueNode),
    Expr {
        op: Combination,
        children: Vec<Condition>,
    },
}

/// One `field = value` assignment of an update commit.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateValue {
    pub field: String,
    pub value: Vec<u8>,
}

/// The payload of a `.upd` file (updates are experimental in TileDB, and its readers
/// ignore them).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateCommit {
    /// Stored negated, like a delete condition.
    pub condition: Condition,
    pub values: Vec<UpdateValue>,
}

/// Parses a `.del` payload: exactly one tree, nothing after it.
pub fn parse_delete_condition(payload: &[u8]) -> Result<Condition> {
    let mut r = Reader::new(payload);
    let condition = parse_node(&mut r, 0)?;
    if !r.is_empty() {
        return Err(r.invalid(
            "delete condition",
            format!("{} bytes after the condition", r.remaining()),
        ));
    }
    Ok(condition)
}

/// Parses a `.upd` payload: a tree, then the update values, nothing after them.
pub fn parse_update(payload: &[u8]) -> Result<UpdateCommit> {
    let mut r = Reader::new(payload);
    let condition = parse_node(&mut r, 0)?;
    let count = r.count(16, "update value count")?;
    let values = (0..count)
        .map(|_| {
            let field = r.string_u64("update field name")?;
            let len = r.u64("update value size")?;
            let value = r.bytes(len, "update value")?.to_vec();
            Ok(UpdateValue { field, value })
        })
        .collect::<Result<Vec<_>>>()?;
    if !r.is_empty() {
        return Err(r.invalid(
            "update values",
            format!("{} bytes after the update values", r.remaining()),
        ));
    }
    Ok(UpdateCommit { condition, values })
}

fn parse_node(r: &mut Reader, depth: usize) -> Result<Condition> {
    let at = r.offset();
    if depth > MAX_DEPTH {
        return Err(FormatError::Invalid {
            field: "condition node",
            offset: at,
            reason: format!("nested deeper than {MAX_DEPTH} levels"),
        });
    }
    match r.u8("condition node type")? {
        1 => parse_value_node(r).map(Condition::Value),
        0 => {
            let at = r.offset();
            let op = match r.u8("condition combination op")? {
                0 => Combination::And,
                1 => Combination::Or,
                2 => Combination::Not,
                other => {
                    return Err(FormatError::Invalid {
                        field: "condition combination op",
                        offset: at,
                        reason: format!("unknown combination op {other}"),
                    })
                }
            };
            let count_at = r.offset();
            let count = r.count(MIN_NODE_LEN, "condition child count")?;
            // TileDB refuses to write AND/OR nodes with fewer than 2 children
            // (`ASTNodeExpr::check_node_validity`); a NOT node means something only
            // with exactly one.
            let allowed = match op {
                Combination::And | Combination::Or => count >= 2,
                Combination::Not => count == 1,
            };
            if !allowed {
                return Err(FormatError::Invalid {
                    field: "condition child count",
                    offset: count_at,
                    reason: format!(
                        "{} node with {count} children",
                        match op {
                            Combination::And => "AND",
                            Combination::Or => "OR",
                            Combination::Not => "NOT",
                        }
                    ),
                });
            }
            let children = (0..count)
                .map(|_| parse_node(r, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            Ok(Condition::Expr { op, children })
        }
        other => Err(FormatError::Invalid {
            field: "condition node type",
            offset: at,
            reason: format!("unknown node type {other}"),
        }),
    }
}

fn parse_value_node(r: &mut Reader) -> Result<ValueNode> {
    let at = r.offset();
    let id = r.u8("condition operator")?;
    let op = Op::from_id(id).ok_or_else(|| FormatError::Invalid {
        field: "condition operator",
        offset: at,
        reason: format!("unknown operator {id}"),
    })?;
    let field = r.string_u32("condition field name")?;
    let len = r.u64("condition value size")?;
    let value = r.bytes(len, "condition value")?.to_vec();
    let mut offsets = Vec::new();
    if op.is_set() {
        let at = r.offset();
        let size = r.u64("condition set offsets size")?;
        if size % 8 != 0 {
            return Err(FormatError::Invalid {
                field: "condition set offsets size",
                offset: at,
                reason: format!("{size} is not a multiple of 8"),
            });
        }
        offsets = r.u64_vec(size / 8, "condition set offsets")?;
        check_set_offsets(&offsets, value.len() as u64, at + 8)?;
    }
    Ok(ValueNode {
        op,
        field,
        value,
        offsets,
    })
}

/// The checks of TileDB's set-membership `ASTNodeVal` constructor: offsets never
/// decrease, the last is within the data, and data comes with offsets.
fn check_set_offsets(offsets: &[u64], data_len: u64, at: u64) -> Result<()> {
    let invalid = |i: usize, reason: String| FormatError::Invalid {
        field: "condition set offsets",
        offset: at + 8 * i as u64,
        reason,
    };
    if offsets.is_empty() && data_len > 0 {
        return Err(invalid(
            0,
            format!("{data_len} bytes of set members but no offsets"),
        ));
    }
    let mut previous = 0;
    for (i, &o) in offsets.iter().enumerate() {
        if o < previous {
            return Err(invalid(
                i,
                format!("offset {o} is below the previous {previous}"),
            ));
        }
        if o > data_len {
            return Err(invalid(
                i,
                format!("offset {o} is past the {data_len} value bytes"),
            ));
        }
        previous = o;
    }
    Ok(())
}

impl Condition {
    /// The condition with TileDB's negation applied (`get_negated_tree`): every value
    /// node's operator negated and AND ↔ OR (De Morgan), the same tree shape otherwise.
    /// Applied to a stored delete condition it gives the user's condition back.
    ///
    /// `NOT (x)` negates to `x` (TileDB would throw: it never stores NOT nodes).
    pub fn negated(&self) -> Condition {
        match self {
            Condition::Value(v) => Condition::Value(ValueNode {
                op: v.op.negated(),
                ..v.clone()
            }),
            Condition::Expr {
                op: Combination::Not,
                children,
            } if children.len() == 1 => children[0].clone(),
            Condition::Expr {
                op: Combination::Not,
                ..
            } => Condition::Expr {
                op: Combination::Not,
                children: vec![self.clone()],
            },
            Condition::Expr { op, children } => Condition::Expr {
                op: if *op == Combination::And {
                    Combination::Or
                } else {
                    Combination::And
                },
                children: children.iter().map(Condition::negated).collect(),
            },
        }
    }

    /// Renders the condition as text, like `v < 40`, `name = 'x' AND n IS NULL`,
    /// `a IN (1, 2, 3)`, `s != 'it''s'`.
    ///
    /// Values are decoded with the datatype `datatype_of` gives for their field:
    /// integers, DATETIME and TIME in decimal, floats in the shortest form that reads
    /// back to the same value (`1.5`, `0.1`, `1e-7`, `nan`), CHAR / STRING_ASCII /
    /// STRING_UTF8 quoted with `'` (doubled inside), BOOL as `true` / `false`. Anything
    /// that cannot be decoded exactly is shown as hex bytes `x'0a0b'`: an unknown field
    /// (`None`), a size that does not match the type, a string that is not UTF-8 or
    /// holds control characters, other types. Note that for an attribute with an
    /// enumeration the value may be the label (the C API's default) or the index
    /// (TileDB-Py translates labels before TileDB sees them); pass the type that fits.
    ///
    /// Empty EQ/NE values render as `IS NULL` / `IS NOT NULL` ([`ValueNode::is_null_test`]).
    /// Field names that are not plain identifiers are double-quoted. AND binds tighter
    /// than OR, but an AND inside an OR (or the reverse) is bracketed anyway so that no
    /// reader has to know that; a NOT's operand is always bracketed.
    pub fn to_text(&self, datatype_of: impl Fn(&str) -> Option<Datatype>) -> String {
        let mut out = String::new();
        self.write_text(&datatype_of, &mut out);
        out
    }

    fn write_text(&self, datatype_of: &dyn Fn(&str) -> Option<Datatype>, out: &mut String) {
        match self {
            Condition::Value(v) => write_value_node(v, datatype_of, out),
            Condition::Expr {
                op: Combination::Not,
                children,
            } => {
                out.push_str("NOT (");
                for (i, c) in children.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    c.write_text(datatype_of, out);
                }
                out.push(')');
            }
            Condition::Expr { op, children } => {
                if children.is_empty() {
                    // Only in hand-built trees: the identities of AND and OR.
                    out.push_str(if *op == Combination::And {
                        "TRUE"
                    } else {
                        "FALSE"
                    });
                }
                let joiner = if *op == Combination::And {
                    " AND "
                } else {
                    " OR "
                };
                for (i, c) in children.iter().enumerate() {
                    if i > 0 {
                        out.push_str(joiner);
                    }
                    let bracket = matches!(
                        c,
                        Condition::Expr { op: child_op, children }
                            if *child_op != *op && *child_op != Combination::Not
                                && children.len() > 1
                    );
                    if bracket {
                        out.push('(');
                    }
                    c.write_text(datatype_of, out);
                    if bracket {
                        out.push(')');
                    }
                }
            }
        }
    }
}

fn write_value_node(
    v: &ValueNode,
    datatype_of: &dyn Fn(&str) -> Option<Datatype>,
    out: &mut String,
) {
    if matches!(v.op, Op::AlwaysTrue | Op::AlwaysFalse) {
        out.push_str(v.op.symbol());
        return;
    }
    out.push_str(&field_text(&v.field));
    if v.is_null_test() {
        out.push_str(if v.op == Op::Eq {
            " IS NULL"
        } else {
            " IS NOT NULL"
        });
        return;
    }
    out.push(' ');
    out.push_str(v.op.symbol());
    out.push(' ');
    let datatype = datatype_of(&v.field);
    if v.op.is_set() {
        out.push('(');
        match v.members() {
            Some(members) => {
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&literal(m, datatype));
                }
            }
            // A hand-built node whose offsets do not fit: show the raw bytes.
            None => out.push_str(&hex(&v.value)),
        }
        out.push(')');
    } else {
        out.push_str(&literal(&v.value, datatype));
    }
}

/// A field name as is when it is a plain identifier, else double-quoted.
fn field_text(name: &str) -> String {
    let mut chars = name.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("x'{digits}'")
}

/// One value decoded by `datatype`, or hex when it cannot be decoded exactly.
fn literal(bytes: &[u8], datatype: Option<Datatype>) -> String {
    use Datatype::*;
    let Some(t) = datatype else {
        return hex(bytes);
    };
    let text = match t {
        Char | StringAscii | StringUtf8 => std::str::from_utf8(bytes)
            .ok()
            .filter(|s| !s.chars().any(char::is_control))
            .map(|s| format!("'{}'", s.replace('\'', "''"))),
        Float32 => bytes.try_into().ok().map(|b| {
            float_text(
                f32::from_le_bytes(b) as f64,
                format!("{:?}", f32::from_le_bytes(b)),
            )
        }),
        Float64 => bytes.try_into().ok().map(|b| {
            float_text(
                f64::from_le_bytes(b),
                format!("{:?}", f64::from_le_bytes(b)),
            )
        }),
        Bool => match bytes {
            [0] => Some("false".to_string()),
            [1] => Some("true".to_string()),
            _ => None,
        },
        Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64 => int_text(bytes, t),
        t if t.is_temporal() => int_text(bytes, t),
        _ => None,
    };
    text.unwrap_or_else(|| hex(bytes))
}

fn int_text(bytes: &[u8], t: Datatype) -> Option<String> {
    if bytes.len() as u64 != t.size() {
        return None;
    }
    decode_int(bytes, t).map(|v| v.to_string())
}

/// `shortest` is Rust's `{:?}`: the shortest digits that read back to the same value
/// (of the value's own width, so an f32 `0.1` stays `0.1`); NaN and the infinities are
/// spelled as Python does.
fn float_text(v: f64, shortest: String) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        shortest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::commits::parse_consolidated_commits;
    use crate::format::metadata::FileOrder;
    use crate::format::schema::ArraySchema;
    use crate::test_support::{
        file_tile_payload, format_testdata, shared_corpus_or_skip, tile_payload,
    };
    use std::collections::{BTreeMap, HashMap};
    use std::path::Path;

    // ---- hand-built trees ----

    fn value(op: u8, field: &str, value: &[u8], offsets: Option<&[u64]>) -> Vec<u8> {
        let mut b = vec![1, op];
        b.extend((field.len() as u32).to_le_bytes());
        b.extend(field.as_bytes());
        b.extend((value.len() as u64).to_le_bytes());
        b.extend(value);
        if let Some(offsets) = offsets {
            b.extend((offsets.len() as u64 * 8).to_le_bytes());
            for o in offsets {
                b.extend(o.to_le_bytes());
            }
        }
        b
    }

    fn expr(op: u8, children: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0, op];
        b.extend((children.len() as u64).to_le_bytes());
        for c in children {
            b.extend(c);
        }
        b
    }

    fn i32s(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// `(a >= 5 OR s = 'q') AND n IN (1, 2)` as a stored tree.
    fn sample() -> Vec<u8> {
        expr(
            0,
            &[
                expr(
                    1,
                    &[value(3, "a", &i32s(&[5]), None), value(4, "s", b"q", None)],
                ),
                value(6, "n", &i32s(&[1, 2]), Some(&[0, 4])),
            ],
        )
    }

    fn types(field: &str) -> Option<Datatype> {
        match field {
            "a" | "n" => Some(Datatype::Int32),
            "s" => Some(Datatype::StringUtf8),
            "f" => Some(Datatype::Float64),
            "g" => Some(Datatype::Float32),
            "u" => Some(Datatype::UInt64),
            "i8" => Some(Datatype::Int8),
            "b" => Some(Datatype::Bool),
            "t" => Some(Datatype::DatetimeMs),
            "c" => Some(Datatype::Char),
            "w" => Some(Datatype::StringUtf16),
            _ => None,
        }
    }

    #[test]
    fn parses_every_field() {
        let c = parse_delete_condition(&sample()).unwrap();
        let Condition::Expr { op, children } = &c else {
            panic!("{c:?}")
        };
        assert_eq!(*op, Combination::And);
        assert_eq!(children.len(), 2);
        assert_eq!(
            children[1],
            Condition::Value(ValueNode {
                op: Op::In,
                field: "n".into(),
                value: i32s(&[1, 2]),
                offsets: vec![0, 4],
            })
        );
        let Condition::Expr { op, children } = &children[0] else {
            panic!()
        };
        assert_eq!(*op, Combination::Or);
        assert_eq!(
            children[1],
            Condition::Value(ValueNode {
                op: Op::Eq,
                field: "s".into(),
                value: b"q".to_vec(),
                offsets: vec![],
            })
        );
        assert_eq!(c.to_text(types), "(a >= 5 OR s = 'q') AND n IN (1, 2)");
        assert_eq!(
            c.negated().to_text(types),
            "(a < 5 AND s != 'q') OR n NOT IN (1, 2)"
        );
        assert_eq!(c.negated().negated(), c);
    }

    #[test]
    fn every_operator_and_its_negation() {
        let cases = [
            (0, "a < 7", "a >= 7"),
            (1, "a <= 7", "a > 7"),
            (2, "a > 7", "a <= 7"),
            (3, "a >= 7", "a < 7"),
            (4, "a = 7", "a != 7"),
            (5, "a != 7", "a = 7"),
        ];
        for (id, text, negated) in cases {
            let c = parse_delete_condition(&value(id, "a", &i32s(&[7]), None)).unwrap();
            assert_eq!(c.to_text(types), text);
            assert_eq!(c.negated().to_text(types), negated);
            assert_eq!(Op::from_id(id).unwrap().id(), id);
        }
        let c = parse_delete_condition(&value(7, "a", &i32s(&[7, 8]), Some(&[0, 4]))).unwrap();
        assert_eq!(c.to_text(types), "a NOT IN (7, 8)");
        assert_eq!(c.negated().to_text(types), "a IN (7, 8)");
        for (id, text, negated) in [(253, "TRUE", "FALSE"), (254, "FALSE", "TRUE")] {
            let c = parse_delete_condition(&value(id, "a", b"", None)).unwrap();
            assert_eq!(c.to_text(types), text);
            assert_eq!(c.negated().to_text(types), negated);
            assert_eq!(Op::from_id(id).unwrap().id(), id);
        }
        assert_eq!(Op::from_id(8), None);
    }

    #[test]
    fn null_tests() {
        let c = parse_delete_condition(&value(4, "n", b"", None)).unwrap();
        assert_eq!(c.to_text(types), "n IS NULL");
        assert_eq!(c.negated().to_text(types), "n IS NOT NULL");
        // An empty value with another operator is a plain comparison.
        let c = parse_delete_condition(&value(0, "s", b"", None)).unwrap();
        assert_eq!(c.to_text(types), "s < ''");
    }

    #[test]
    fn values_by_datatype() {
        let text = |field: &str, bytes: &[u8]| {
            Condition::Value(ValueNode {
                op: Op::Eq,
                field: field.into(),
                value: bytes.to_vec(),
                offsets: vec![],
            })
            .to_text(types)
        };
        assert_eq!(text("a", &(-7i32).to_le_bytes()), "a = -7");
        assert_eq!(
            text("u", &u64::MAX.to_le_bytes()),
            "u = 18446744073709551615"
        );
        assert_eq!(text("i8", &[0x80]), "i8 = -128");
        assert_eq!(
            text("t", &1_700_000_000_000i64.to_le_bytes()),
            "t = 1700000000000"
        );
        assert_eq!(text("f", &1.5f64.to_le_bytes()), "f = 1.5");
        assert_eq!(text("f", &0.1f64.to_le_bytes()), "f = 0.1");
        assert_eq!(text("f", &2.0f64.to_le_bytes()), "f = 2.0");
        assert_eq!(text("f", &1e-7f64.to_le_bytes()), "f = 1e-7");
        assert_eq!(text("f", &f64::NAN.to_le_bytes()), "f = nan");
        assert_eq!(text("f", &f64::NEG_INFINITY.to_le_bytes()), "f = -inf");
        assert_eq!(text("g", &0.1f32.to_le_bytes()), "g = 0.1");
        assert_eq!(text("g", &f32::INFINITY.to_le_bytes()), "g = inf");
        assert_eq!(text("b", &[1]), "b = true");
        assert_eq!(text("b", &[0]), "b = false");
        assert_eq!(text("b", &[2]), "b = x'02'");
        assert_eq!(text("s", b"it's"), "s = 'it''s'");
        assert_eq!(text("c", "h\u{e9}".as_bytes()), "c = 'h\u{e9}'");
        // Not decodable exactly: hex.
        assert_eq!(text("s", &[0xff, 0x00]), "s = x'ff00'");
        assert_eq!(text("s", b"a\nb"), "s = x'610a62'");
        assert_eq!(text("a", &[1, 2]), "a = x'0102'");
        assert_eq!(text("f", &[0; 4]), "f = x'00000000'");
        assert_eq!(text("w", &[0x61, 0]), "w = x'6100'");
        assert_eq!(text("unknown", &[0x0a, 0x0b]), "unknown = x'0a0b'");
        // Field names that are not identifiers.
        assert_eq!(text("my field", b"x"), "\"my field\" = x'78'");
        assert_eq!(text("q\"x", b"x"), "\"q\"\"x\" = x'78'");
        assert_eq!(text("_ok9", b"x"), "_ok9 = x'78'");
        assert_eq!(text("9lives", b"x"), "\"9lives\" = x'78'");
    }

    #[test]
    fn sets() {
        let set = |field: &str, data: &[u8], offsets: &[u64]| {
            parse_delete_condition(&value(6, field, data, Some(offsets)))
                .unwrap()
                .to_text(types)
        };
        assert_eq!(set("s", b"pqq", &[0, 1]), "s IN ('p', 'qq')");
        assert_eq!(set("s", b"p", &[0, 1]), "s IN ('p', '')");
        assert_eq!(set("a", &i32s(&[1, 2, 3]), &[0, 4, 8]), "a IN (1, 2, 3)");
        assert_eq!(set("a", &[1, 2, 3], &[0, 2]), "a IN (x'0102', x'03')");
        assert_eq!(set("a", b"", &[]), "a IN ()");
        let hand_built = Condition::Value(ValueNode {
            op: Op::In,
            field: "a".into(),
            value: vec![1, 2],
            offsets: vec![1, 0],
        });
        assert_eq!(hand_built.to_text(types), "a IN (x'0102')");
    }

    #[test]
    fn brackets_only_around_mixed_operators() {
        let v = |n: i32| value(0, "a", &i32s(&[n]), None);
        let c = parse_delete_condition(&expr(
            1,
            &[v(1), expr(1, &[v(2), v(3)]), expr(0, &[v(4), v(5)])],
        ))
        .unwrap();
        assert_eq!(
            c.to_text(types),
            "a < 1 OR a < 2 OR a < 3 OR (a < 4 AND a < 5)"
        );
        assert_eq!(
            c.negated().to_text(types),
            "a >= 1 AND a >= 2 AND a >= 3 AND (a >= 4 OR a >= 5)"
        );
        let c = parse_delete_condition(&expr(0, &[expr(2, &[v(1)]), v(2)])).unwrap();
        assert_eq!(c.to_text(types), "NOT (a < 1) AND a < 2");
        // NOT(x) negates to x.
        assert_eq!(c.negated().to_text(types), "a < 1 OR a >= 2");
        let c = parse_delete_condition(&expr(2, &[expr(1, &[v(1), v(2)])])).unwrap();
        assert_eq!(c.to_text(types), "NOT (a < 1 OR a < 2)");
    }

    #[test]
    fn update_commits() {
        let mut b = value(3, "a", &i32s(&[5]), None);
        b.extend(2u64.to_le_bytes());
        for (field, v) in [("a", i32s(&[9])), ("s", b"zz".to_vec())] {
            b.extend((field.len() as u64).to_le_bytes());
            b.extend(field.as_bytes());
            b.extend((v.len() as u64).to_le_bytes());
            b.extend(v);
        }
        let u = parse_update(&b).unwrap();
        assert_eq!(u.condition.negated().to_text(types), "a < 5");
        assert_eq!(
            u.values,
            vec![
                UpdateValue {
                    field: "a".into(),
                    value: i32s(&[9])
                },
                UpdateValue {
                    field: "s".into(),
                    value: b"zz".to_vec()
                },
            ]
        );
        for cut in 0..b.len() {
            assert!(parse_update(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(parse_update(&long).is_err());
        // A .del payload is not a valid .upd payload, nor the reverse.
        assert!(parse_update(&sample()).is_err());
        assert!(parse_delete_condition(&b).is_err());
        let mut none = value(3, "a", &i32s(&[5]), None);
        none.extend(0u64.to_le_bytes());
        assert_eq!(parse_update(&none).unwrap().values, vec![]);
    }

    #[test]
    fn truncation_at_every_byte_is_an_error() {
        let s = sample();
        for cut in 0..s.len() {
            assert!(parse_delete_condition(&s[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = s.clone();
        long.push(1);
        let err = parse_delete_condition(&long).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "invalid delete condition at byte {}: 1 bytes after the condition",
                s.len()
            )
        );
    }

    fn err(bytes: &[u8]) -> String {
        parse_delete_condition(bytes).unwrap_err().to_string()
    }

    #[test]
    fn unreadable_conditions_are_errors() {
        let v = value(0, "a", &i32s(&[1]), None);
        assert_eq!(
            err(&[2]),
            "invalid condition node type at byte 0: unknown node type 2"
        );
        assert_eq!(
            err(&value(9, "a", b"", None)),
            "invalid condition operator at byte 1: unknown operator 9"
        );
        assert_eq!(
            err(&expr(3, &[v.clone(), v.clone()])),
            "invalid condition combination op at byte 1: unknown combination op 3"
        );
        assert!(err(&expr(0, std::slice::from_ref(&v))).contains("AND node with 1 children"));
        assert!(err(&expr(1, &[])).contains("OR node with 0 children"));
        assert!(err(&expr(2, &[v.clone(), v.clone()])).contains("NOT node with 2 children"));
        // Counts and sizes past the end.
        let mut b = vec![0, 0];
        b.extend(u64::MAX.to_le_bytes());
        assert!(err(&b).starts_with("invalid condition child count at byte 2"));
        let mut b = value(0, "a", b"", None);
        b[7..15].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(
            err(&b).starts_with("truncated condition value at byte 15"),
            "{}",
            err(&b)
        );
        let mut b = value(0, "", b"", None);
        b[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&b).starts_with("truncated condition field name at byte 6"));
        // Set offsets.
        assert!(err(&value(6, "a", &[1, 2], Some(&[0, 3]))).contains("offset 3 is past"));
        assert!(err(&value(6, "a", &[1, 2], Some(&[1, 0]))).contains("below the previous"));
        assert!(err(&value(6, "a", &[1, 2], Some(&[]))).contains("but no offsets"));
        let mut b = value(6, "a", b"", None);
        b.extend(5u64.to_le_bytes());
        b.extend([0; 5]);
        assert!(err(&b).contains("5 is not a multiple of 8"));
        let mut b = value(6, "a", b"", None);
        b.extend((u64::MAX - 7).to_le_bytes());
        assert!(err(&b).starts_with("truncated condition set offsets"));
        // The empty payload.
        assert_eq!(
            err(&[]),
            "truncated condition node type at byte 0: needs 1 bytes, only 0 left"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let leaf = value(0, "a", &i32s(&[1]), None);
        let nest = |depth: usize| {
            // NOT(NOT(...NOT(leaf)))
            let mut b = Vec::new();
            for _ in 0..depth {
                b.extend([0, 2]);
                b.extend(1u64.to_le_bytes());
            }
            b.extend(&leaf);
            b
        };
        let deepest = parse_delete_condition(&nest(MAX_DEPTH)).unwrap();
        let text = deepest.to_text(types);
        let expected = format!(
            "{}a < 1{}",
            "NOT (".repeat(MAX_DEPTH),
            ")".repeat(MAX_DEPTH)
        );
        assert_eq!(text, expected);
        // Negation removes one NOT.
        assert_eq!(
            deepest.negated().to_text(types).len(),
            text.len() - "NOT ()".len()
        );
        let err = err(&nest(MAX_DEPTH + 1));
        assert!(err.contains("nested deeper than 256 levels"), "{err}");
        assert!(parse_delete_condition(&nest(100_000)).is_err());
    }

    // ---- real files ----

    /// Turns a TileDB-Py condition string into the text `to_text` writes, by syntax
    /// only, so that it cannot make two different conditions equal: `==` → `=`,
    /// `and`/`or` → `AND`/`OR`, `in [..]`/`not in [..]` → `IN (..)`/`NOT IN (..)`,
    /// `== None`/`!= None` → `IS NULL`/`IS NOT NULL`, Python string literals →
    /// `'...'` with `''`, and the spacing `to_text` uses. Brackets are kept as written,
    /// so a string whose brackets differ from `to_text`'s fails the comparison.
    fn normalise_tiledb_py(condition: &str) -> String {
        let mut tokens: Vec<String> = Vec::new();
        let chars: Vec<char> = condition.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_whitespace() {
                i += 1;
            } else if c == '\'' || c == '"' {
                let end = chars[i + 1..].iter().position(|&x| x == c).unwrap() + i + 1;
                let body: String = chars[i + 1..end].iter().collect();
                assert!(!body.contains('\\'), "escapes are not handled: {condition}");
                tokens.push(format!("'{}'", body.replace('\'', "''")));
                i = end + 1;
            } else if c.is_alphanumeric()
                || c == '_'
                || c == '.'
                || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
            {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                tokens.push(chars[start..i].iter().collect());
            } else if "<>=!".contains(c) {
                let start = i;
                while i < chars.len() && "<>=!".contains(chars[i]) {
                    i += 1;
                }
                tokens.push(chars[start..i].iter().collect());
            } else {
                tokens.push(c.to_string());
                i += 1;
            }
        }
        let mut out: Vec<String> = Vec::new();
        let mut k = 0;
        while k < tokens.len() {
            let t = tokens[k].as_str();
            let next = tokens.get(k + 1).map(String::as_str);
            match (t, next) {
                ("==", Some("None")) => {
                    out.push("IS NULL".into());
                    k += 1;
                }
                ("!=", Some("None")) => {
                    out.push("IS NOT NULL".into());
                    k += 1;
                }
                ("not", Some("in")) => {
                    out.push("NOT IN".into());
                    k += 1;
                }
                ("==", _) => out.push("=".into()),
                ("and", _) => out.push("AND".into()),
                ("or", _) => out.push("OR".into()),
                ("in", _) => out.push("IN".into()),
                ("not", _) => out.push("NOT".into()),
                ("[", _) => out.push("(".into()),
                ("]", _) => out.push(")".into()),
                _ => out.push(t.to_string()),
            }
            k += 1;
        }
        let mut text = String::new();
        for (j, t) in out.iter().enumerate() {
            let glue = j == 0 || t == ")" || t == "," || out[j - 1] == "(";
            if !glue {
                text.push(' ');
            }
            text.push_str(t);
        }
        text
    }

    #[test]
    fn normaliser_is_syntax_only() {
        assert_eq!(normalise_tiledb_py("a < 5"), "a < 5");
        assert_eq!(
            normalise_tiledb_py("(a<5 and s == \"it's\") or n != None"),
            "(a < 5 AND s = 'it''s') OR n IS NOT NULL"
        );
        assert_eq!(
            normalise_tiledb_py("a not in [1,-2] and b in ['x']"),
            "a NOT IN (1, -2) AND b IN ('x')"
        );
    }

    /// Conditions whose TileDB normal form is not a syntactic rewrite of what the
    /// client wrote, with the reason.
    fn tiledb_normal_form(condition: &str) -> Option<&'static str> {
        Some(match condition {
            // TileDB-Py applies `not` through QueryCondition::negate, which pushes the
            // negation into the operators (get_negated_tree): no NOT node exists.
            "not (a < 5)" => "a >= 5",
            // A comparison with the empty string and a null test are stored alike (an
            // empty value); to_text reads both as null tests.
            "s == ''" => "s IS NULL",
            // TileDB-Py translates an enumeration label into the attribute's index
            // (green is index 1 of `colors`) before it hands the condition to TileDB.
            "color == 'green'" => "color = 1",
            _ => return None,
        })
    }

    fn expected_text(condition: &str) -> String {
        tiledb_normal_form(condition)
            .map(str::to_string)
            .unwrap_or_else(|| normalise_tiledb_py(condition))
    }

    /// Field name → datatype from the newest schema file of `schema_dir`.
    fn field_types(schema_dir: &Path) -> HashMap<String, Datatype> {
        let newest = std::fs::read_dir(schema_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .max_by_key(|p| FileOrder::from_name(&p.file_name().unwrap().to_string_lossy()))
            .unwrap();
        let schema = ArraySchema::parse(&file_tile_payload(&newest)).unwrap();
        let mut types: HashMap<String, Datatype> = schema
            .attributes
            .iter()
            .map(|a| (a.name.clone(), a.datatype))
            .collect();
        types.extend(
            schema
                .dimensions
                .iter()
                .map(|d| (d.name.clone(), d.datatype)),
        );
        types
    }

    /// Checks every `.del` of a commits folder, and every `.del` embedded in its `.con`
    /// files, against `expected` (timestamp → TileDB-Py condition). Returns the number
    /// of standalone and embedded conditions checked.
    fn check_commits(
        dir: &Path,
        expected: &BTreeMap<u64, String>,
        types: &HashMap<String, Datatype>,
    ) -> (usize, usize) {
        let check = |name: &str, tile: &[u8]| {
            let what = format!("{} in {}", name, dir.display());
            let t1 = FileOrder::from_name(name).unwrap().t1;
            let condition = expected
                .get(&t1)
                .unwrap_or_else(|| panic!("{what}: no delete at {t1} in the expected list"));
            let stored = parse_delete_condition(&tile_payload(tile, &what)).unwrap();
            let text = stored.negated().to_text(|f| types.get(f).copied());
            assert_eq!(
                text,
                expected_text(condition),
                "{what}: given {condition:?}"
            );
        };
        let (mut standalone, mut embedded) = (0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".del") {
                check(&name, &std::fs::read(&path).unwrap());
                standalone += 1;
            } else if name.ends_with(".con") {
                for e in parse_consolidated_commits(&std::fs::read(&path).unwrap()).unwrap() {
                    if let (true, Some(tile)) = (e.path.ends_with(".del"), &e.payload) {
                        check(&e.path, tile);
                        embedded += 1;
                    }
                }
            }
        }
        (standalone, embedded)
    }

    fn deletes_of(json: &serde_json::Value) -> BTreeMap<u64, String> {
        let mut out = BTreeMap::new();
        for d in json["deletes"].as_array().into_iter().flatten() {
            let ts = d["timestamp"].as_u64().unwrap();
            let condition = d["condition"].as_str().unwrap().to_string();
            assert!(out.insert(ts, condition).is_none(), "two deletes at {ts}");
        }
        out
    }

    /// Twenty conditions given to TileDB-Py (`testdata/generate.py`), each as a `.del`
    /// and again inside the `.con` that consolidating the commits wrote.
    #[test]
    fn real_conditions_written_by_tiledb_py() {
        let dir = format_testdata("conditions");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("deletes.json")).unwrap()).unwrap();
        let expected = deletes_of(&json);
        let types = field_types(&dir.join("__schema"));
        assert_eq!(types["s"], Datatype::StringUtf8);
        let (standalone, embedded) = check_commits(&dir, &expected, &types);
        assert_eq!((standalone, embedded), (20, 20));
        assert_eq!(expected.len(), 20);
    }

    /// Every delete of the shared corpus and of the repository's fixtures (arrays with
    /// an `<array>.expected.json` listing `deletes`).
    #[test]
    fn real_conditions_of_the_corpus() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut roots = vec![repo.join("tests/fixtures/tiledb")];
        if let Some(shared) = shared_corpus_or_skip() {
            roots.extend(
                std::fs::read_dir(&shared)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.is_dir()),
            );
        }
        let (mut standalone, mut embedded, mut arrays) = (0, 0, 0);
        for root in roots {
            let entries =
                std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
            for entry in entries {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let Some(array) = name.strip_suffix(".expected.json") else {
                    continue;
                };
                let json: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                let expected = deletes_of(&json);
                let commits = root.join(array).join("__commits");
                if expected.is_empty() || !commits.is_dir() {
                    continue;
                }
                let types = field_types(&root.join(array).join("__schema"));
                let (s, e) = check_commits(&commits, &expected, &types);
                standalone += s;
                embedded += e;
                arrays += 1;
            }
        }
        eprintln!(
            "checked {standalone} .del files and {embedded} embedded ones in {arrays} arrays"
        );
        assert!(
            standalone > 0,
            "the repository's fixtures have delete commits"
        );
    }
}
