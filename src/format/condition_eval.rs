//! Evaluating a delete condition ([`Condition`], parsed by [`super::condition`]) on one
//! cell, as TileDB's reader does when it applies a delete (`query_condition.cc`).
//!
//! Pure: the caller hands over the cell's values of the fields the condition tests and
//! gets a yes or no; where the cells come from (which fragment, which tile) is the
//! merge's business. Kept apart from the merge so its rules can be read, and tested,
//! on their own:
//!
//! - a comparison with a NULL (a null cell, or a fragment written before the field
//!   existed) is false; only the always-true node holds;
//! - values compare by the field's datatype: integers and floats by value, strings,
//!   blobs and var-sized fields byte by byte;
//! - a fixed-size value of another width than the cell's is corrupt, not false.

use std::cmp::Ordering;

use super::condition::{Combination, Condition, Op, ValueNode};
use super::datatype::{decode_int, Datatype};
use super::schema::ArraySchema;

/// A field a condition tests, with what comparing its values needs.
#[derive(Debug, Clone, PartialEq)]
pub struct TestedField {
    pub name: String,
    pub datatype: Datatype,
    /// Var-sized: values compare byte by byte whatever the datatype.
    pub var: bool,
}

/// Why a condition cannot be evaluated: the bytes on disk do not fit together.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalError {
    /// The field the failing comparison tests.
    pub field: String,
    pub reason: String,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for EvalError {}

/// The fields `conditions` test, each once in order of first mention, typed by
/// `schema`. A field the schema lacks is left out: evaluating a condition on it is
/// then an error, raised only if a cell is actually tested.
pub fn tested_fields<'c>(
    schema: &ArraySchema,
    conditions: impl IntoIterator<Item = &'c Condition>,
) -> Vec<TestedField> {
    let mut tested: Vec<TestedField> = Vec::new();
    for condition in conditions {
        for_each_field(condition, &mut |name| {
            if tested.iter().any(|f| f.name == name) {
                return;
            }
            let field = schema
                .dimensions
                .iter()
                .map(|d| (&d.name, d.datatype, d.is_var()))
                .chain(
                    schema
                        .attributes
                        .iter()
                        .map(|a| (&a.name, a.datatype, a.is_var())),
                )
                .find(|(n, ..)| *n == name);
            if let Some((n, datatype, var)) = field {
                tested.push(TestedField {
                    name: n.clone(),
                    datatype,
                    var,
                });
            }
        });
    }
    tested
}

/// Calls `f` with every field name a condition tests (repeats included).
fn for_each_field(c: &Condition, f: &mut impl FnMut(&str)) {
    match c {
        Condition::Value(v) => f(&v.field),
        Condition::Expr { children, .. } => {
            for child in children {
                for_each_field(child, f);
            }
        }
    }
}

/// Whether `condition` holds for one cell. `value(i)` is the cell's value of
/// `fields[i]`, `None` where it is NULL (a null cell, or a fragment without the field).
/// AND and OR stop at the first child that decides them: a corrupt comparison after it
/// is not reached, so not reported.
pub fn holds<'v>(
    condition: &Condition,
    fields: &[TestedField],
    value: &dyn Fn(usize) -> Option<&'v [u8]>,
) -> Result<bool, EvalError> {
    Ok(match condition {
        Condition::Expr { op, children } => match op {
            Combination::And => {
                for child in children {
                    if !holds(child, fields, value)? {
                        return Ok(false);
                    }
                }
                true
            }
            Combination::Or => {
                for child in children {
                    if holds(child, fields, value)? {
                        return Ok(true);
                    }
                }
                false
            }
            Combination::Not => match children.first() {
                Some(child) => !holds(child, fields, value)?,
                None => true,
            },
        },
        Condition::Value(v) => compare(v, fields, value)?,
    })
}

/// One comparison node on the cell.
fn compare<'v>(
    v: &ValueNode,
    fields: &[TestedField],
    value: &dyn Fn(usize) -> Option<&'v [u8]>,
) -> Result<bool, EvalError> {
    let error = |reason: String| EvalError {
        field: v.field.clone(),
        reason,
    };
    let Some(f) = fields.iter().position(|f| f.name == v.field) else {
        return Err(error(
            "a delete tests a field the array does not have".into(),
        ));
    };
    let TestedField { datatype, var, .. } = fields[f];
    let Some(cell) = value(f) else {
        return Ok(matches!(v.op, Op::AlwaysTrue));
    };
    let cmp = |member: &[u8]| -> Result<Ordering, EvalError> {
        if !var && member.len() != cell.len() {
            return Err(error(format!(
                "a delete compares {} with a value of {} bytes, its cells have {}",
                v.field,
                member.len(),
                cell.len()
            )));
        }
        Ok(compare_values(datatype, var, cell, member))
    };
    Ok(match v.op {
        Op::Lt => cmp(&v.value)?.is_lt(),
        Op::Le => cmp(&v.value)?.is_le(),
        Op::Gt => cmp(&v.value)?.is_gt(),
        Op::Ge => cmp(&v.value)?.is_ge(),
        Op::Eq => cmp(&v.value)?.is_eq(),
        Op::Ne => cmp(&v.value)?.is_ne(),
        Op::In | Op::NotIn => {
            let members = v
                .members()
                .ok_or_else(|| error("a set whose offsets do not fit".into()))?;
            let mut found = false;
            for m in members {
                if cmp(m)?.is_eq() {
                    found = true;
                    break;
                }
            }
            found == (v.op == Op::In)
        }
        Op::AlwaysTrue => true,
        Op::AlwaysFalse => false,
    })
}

/// Compares a cell's value with a condition's, by the field's datatype. Floats that do
/// not order (a NaN on either side) compare as less: `<`, `<=` and `!=` hold, the rest
/// do not.
pub fn compare_values(t: Datatype, var: bool, a: &[u8], b: &[u8]) -> Ordering {
    if var || t.is_string() || matches!(t, Datatype::Char | Datatype::Blob) {
        return a.cmp(b);
    }
    if t.is_float() {
        let f = |x: &[u8]| match t {
            Datatype::Float32 => f32::from_le_bytes(x.try_into().unwrap_or([0; 4])) as f64,
            _ => f64::from_le_bytes(x.try_into().unwrap_or([0; 8])),
        };
        return f(a).partial_cmp(&f(b)).unwrap_or(Ordering::Less);
    }
    match (decode_int(a, t), decode_int(b, t)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, datatype: Datatype, var: bool) -> TestedField {
        TestedField {
            name: name.into(),
            datatype,
            var,
        }
    }

    fn node(field: &str, op: Op, value: &[u8]) -> Condition {
        Condition::Value(ValueNode {
            op,
            field: field.into(),
            value: value.to_vec(),
            offsets: Vec::new(),
        })
    }

    fn set(field: &str, op: Op, members: &[&[u8]]) -> Condition {
        let mut offsets = Vec::new();
        let mut value = Vec::new();
        for m in members {
            offsets.push(value.len() as u64);
            value.extend_from_slice(m);
        }
        Condition::Value(ValueNode {
            op,
            field: field.into(),
            value,
            offsets,
        })
    }

    fn expr(op: Combination, children: Vec<Condition>) -> Condition {
        Condition::Expr { op, children }
    }

    /// `condition` on a cell whose only tested field `a` holds `cell`.
    fn on(condition: &Condition, a: &TestedField, cell: Option<&[u8]>) -> bool {
        holds(condition, std::slice::from_ref(a), &|_| cell).unwrap()
    }

    #[test]
    fn integers_compare_by_value_not_bytes() {
        let a = field("a", Datatype::Int32, false);
        let minus_one = (-1i32).to_le_bytes();
        let one = 1i32.to_le_bytes();
        assert!(on(&node("a", Op::Lt, &one), &a, Some(&minus_one)));
        assert!(!on(&node("a", Op::Ge, &one), &a, Some(&minus_one)));
        assert!(on(&node("a", Op::Eq, &one), &a, Some(&one)));
        assert!(on(&node("a", Op::Ne, &one), &a, Some(&minus_one)));
        assert!(on(&node("a", Op::Le, &one), &a, Some(&one)));
        assert!(on(&node("a", Op::Gt, &minus_one), &a, Some(&one)));
    }

    #[test]
    fn floats_compare_by_value_and_a_nan_as_less() {
        let a = field("a", Datatype::Float64, false);
        let half = 0.5f64.to_le_bytes();
        let two = 2.0f64.to_le_bytes();
        let nan = f64::NAN.to_le_bytes();
        assert!(on(&node("a", Op::Lt, &two), &a, Some(&half)));
        assert!(on(&node("a", Op::Lt, &two), &a, Some(&nan)));
        assert!(on(&node("a", Op::Lt, &nan), &a, Some(&two)));
        assert!(!on(&node("a", Op::Eq, &nan), &a, Some(&nan)));
        assert!(!on(&node("a", Op::Ge, &nan), &a, Some(&two)));
        let b = field("b", Datatype::Float32, false);
        let minus = (-3.0f32).to_le_bytes();
        assert!(on(
            &node("b", Op::Lt, &1.0f32.to_le_bytes()),
            &b,
            Some(&minus)
        ));
    }

    #[test]
    fn strings_compare_byte_by_byte_whatever_their_length() {
        let s = field("s", Datatype::StringUtf8, true);
        assert!(on(&node("s", Op::Lt, b"b"), &s, Some(b"abc")));
        assert!(on(&node("s", Op::Gt, b"ab"), &s, Some(b"abc")));
        assert!(on(&node("s", Op::Eq, b"abc"), &s, Some(b"abc")));
    }

    #[test]
    fn a_null_makes_every_comparison_false_but_always_true() {
        let a = field("a", Datatype::Int64, false);
        let one = 1i64.to_le_bytes();
        for op in [
            Op::Lt,
            Op::Le,
            Op::Gt,
            Op::Ge,
            Op::Eq,
            Op::Ne,
            Op::AlwaysFalse,
        ] {
            assert!(!on(&node("a", op, &one), &a, None), "{op:?}");
        }
        assert!(on(&node("a", Op::AlwaysTrue, &[]), &a, None));
        assert!(on(&node("a", Op::AlwaysTrue, &[]), &a, Some(&one)));
        assert!(!on(&node("a", Op::AlwaysFalse, &[]), &a, Some(&one)));
    }

    #[test]
    fn sets() {
        let a = field("a", Datatype::UInt8, false);
        let members: &[&[u8]] = &[&[1], &[3]];
        assert!(on(&set("a", Op::In, members), &a, Some(&[3])));
        assert!(!on(&set("a", Op::In, members), &a, Some(&[2])));
        assert!(on(&set("a", Op::NotIn, members), &a, Some(&[2])));
        assert!(!on(&set("a", Op::NotIn, members), &a, Some(&[1])));
        let s = field("s", Datatype::StringAscii, true);
        let words: &[&[u8]] = &[b"red", b"", b"blue"];
        assert!(on(&set("s", Op::In, words), &s, Some(b"")));
        assert!(on(&set("s", Op::In, words), &s, Some(b"blue")));
        assert!(!on(&set("s", Op::In, words), &s, Some(b"bl")));
    }

    #[test]
    fn combinations() {
        let fields = [
            field("a", Datatype::UInt8, false),
            field("b", Datatype::UInt8, false),
        ];
        let cell = |a: u8, b: u8| {
            move |f: usize| -> Option<&'static [u8]> {
                const BYTES: [[u8; 1]; 4] = [[0], [1], [2], [3]];
                Some(&BYTES[[a, b][f] as usize][..])
            }
        };
        let a_is_1 = node("a", Op::Eq, &[1]);
        let b_is_2 = node("b", Op::Eq, &[2]);
        let and = expr(Combination::And, vec![a_is_1.clone(), b_is_2.clone()]);
        let or = expr(Combination::Or, vec![a_is_1.clone(), b_is_2.clone()]);
        let not = expr(Combination::Not, vec![a_is_1]);
        let eval = |c: &Condition, a: u8, b: u8| holds(c, &fields, &cell(a, b)).unwrap();
        assert!(eval(&and, 1, 2));
        assert!(!eval(&and, 1, 3));
        assert!(eval(&or, 0, 2));
        assert!(!eval(&or, 0, 3));
        assert!(eval(&not, 0, 0));
        assert!(!eval(&not, 1, 0));
        assert!(eval(&expr(Combination::Not, vec![]), 0, 0));
        assert!(eval(&expr(Combination::And, vec![]), 0, 0));
        assert!(!eval(&expr(Combination::Or, vec![]), 0, 0));
    }

    #[test]
    fn what_does_not_fit_is_an_error() {
        let a = field("a", Datatype::Int32, false);
        let err =
            |c: &Condition| holds(c, std::slice::from_ref(&a), &|_| Some(&[0; 4])).unwrap_err();
        let e = err(&node("a", Op::Eq, &[1, 0]));
        assert_eq!(e.field, "a");
        assert_eq!(
            e.reason,
            "a delete compares a with a value of 2 bytes, its cells have 4"
        );
        let e = err(&node("x", Op::Eq, &[0; 4]));
        assert_eq!(
            (e.field.as_str(), e.reason.as_str()),
            ("x", "a delete tests a field the array does not have")
        );
        let mut bad_set = set("a", Op::In, &[&[0; 4]]);
        if let Condition::Value(v) = &mut bad_set {
            v.offsets.push(9);
        }
        assert_eq!(err(&bad_set).reason, "a set whose offsets do not fit");
        // A NULL is decided before the widths are compared.
        assert!(!holds(
            &node("a", Op::Eq, &[1, 0]),
            std::slice::from_ref(&a),
            &|_| None
        )
        .unwrap());
    }
}
