//! DynamoDB's meaning of a parsed expression on an item: a comparison with an absent
//! attribute, or between values of different types, is false (and `NOT` of it true), as
//! the DynamoDB developer guide's "Comparison operator and function reference" says;
//! numbers compare by value, strings by their bytes.

use std::cmp::Ordering;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::parse::{Comparator, Condition, Operand, SetValue, Update};

/// An item: its attributes by name.
pub type Attributes = HashMap<String, AttributeValue>;

/// The placeholders of one request: `#name` → attribute name, `:value` → value.
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    pub names: HashMap<String, String>,
    pub values: HashMap<String, AttributeValue>,
}

impl Bindings {
    fn name(&self, placeholder: &str) -> Result<&str, String> {
        self.names
            .get(placeholder)
            .map(String::as_str)
            .ok_or_else(|| format!("{placeholder} is not bound"))
    }

    fn value(&self, placeholder: &str) -> Result<&AttributeValue, String> {
        self.values
            .get(placeholder)
            .ok_or_else(|| format!("{placeholder} is not bound"))
    }

    /// What `operand` reads on `item`: `None` for an absent attribute.
    fn read<'a>(
        &'a self,
        item: &'a Attributes,
        operand: &Operand,
    ) -> Result<Option<&'a AttributeValue>, String> {
        match operand {
            Operand::Name(n) => Ok(item.get(self.name(n)?)),
            Operand::Value(v) => self.value(v).map(Some),
        }
    }

    fn path(&self, operand: &Operand) -> Result<&str, String> {
        match operand {
            Operand::Name(n) => self.name(n),
            Operand::Value(v) => Err(format!("{v} used where an attribute path belongs")),
        }
    }
}

fn order(a: &AttributeValue, b: &AttributeValue) -> Option<Ordering> {
    match (a, b) {
        (AttributeValue::N(x), AttributeValue::N(y)) => {
            let (x, y) = (x.parse::<f64>().ok()?, y.parse::<f64>().ok()?);
            x.partial_cmp(&y)
        }
        (AttributeValue::S(x), AttributeValue::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (AttributeValue::Bool(x), AttributeValue::Bool(y)) => (x == y).then_some(Ordering::Equal),
        _ => None,
    }
}

fn type_name(value: &AttributeValue) -> &'static str {
    match value {
        AttributeValue::N(_) => "N",
        AttributeValue::S(_) => "S",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Null(_) => "NULL",
        AttributeValue::M(_) => "M",
        AttributeValue::L(_) => "L",
        AttributeValue::Ss(_) => "SS",
        AttributeValue::Ns(_) => "NS",
        AttributeValue::B(_) => "B",
        AttributeValue::Bs(_) => "BS",
        _ => "unknown",
    }
}

/// Whether `condition` holds on `item` (an absent item has no attributes).
pub fn holds(condition: &Condition, item: &Attributes, bind: &Bindings) -> Result<bool, String> {
    Ok(match condition {
        Condition::Or(a, b) => holds(a, item, bind)? || holds(b, item, bind)?,
        Condition::And(a, b) => holds(a, item, bind)? && holds(b, item, bind)?,
        Condition::Not(a) => !holds(a, item, bind)?,
        Condition::Compare(left, op, right) => {
            match (bind.read(item, left)?, bind.read(item, right)?) {
                (Some(a), Some(b)) => match order(a, b) {
                    None => false,
                    Some(ordering) => match op {
                        Comparator::Eq => ordering == Ordering::Equal,
                        Comparator::Ne => ordering != Ordering::Equal,
                        Comparator::Lt => ordering == Ordering::Less,
                        Comparator::Le => ordering != Ordering::Greater,
                        Comparator::Gt => ordering == Ordering::Greater,
                        Comparator::Ge => ordering != Ordering::Less,
                    },
                },
                _ => false,
            }
        }
        Condition::In(left, list) => match bind.read(item, left)? {
            None => false,
            Some(a) => {
                let mut any = false;
                for candidate in list {
                    let b = bind.read(item, candidate)?;
                    any |= b.is_some_and(|b| order(a, b) == Some(Ordering::Equal));
                }
                any
            }
        },
        Condition::Exists(path) => item.contains_key(bind.path(path)?),
        Condition::NotExists(path) => !item.contains_key(bind.path(path)?),
        Condition::HasType(path, kind) => {
            let Some(AttributeValue::S(kind)) = bind.read(item, kind)? else {
                return Err("attribute_type's second operand is not a string".into());
            };
            item.get(bind.path(path)?)
                .is_some_and(|value| type_name(value) == kind)
        }
    })
}

/// The item `update` leaves: every `SET` operand is read on the item as it was before the
/// update, as DynamoDB does.
pub fn apply(update: &Update, item: &Attributes, bind: &Bindings) -> Result<Attributes, String> {
    let mut out = item.clone();
    for (path, value) in &update.set {
        let new = match value {
            SetValue::Operand(operand) => bind.read(item, operand)?.cloned(),
            SetValue::IfNotExists(path, default) => match bind.read(item, path)? {
                Some(current) => Some(current.clone()),
                None => bind.read(item, default)?.cloned(),
            },
        };
        let new = new.ok_or_else(|| format!("SET {path:?} reads an absent attribute"))?;
        out.insert(bind.path(path)?.to_owned(), new);
    }
    for path in &update.remove {
        out.remove(bind.path(path)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn n(v: u64) -> AttributeValue {
        AttributeValue::N(v.to_string())
    }

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }

    fn bindings() -> Bindings {
        Bindings {
            names: [("#a", "a"), ("#b", "b")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            values: [
                (":one", n(1)),
                (":ten", n(10)),
                (":x", s("x")),
                (":num", s("N")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        }
    }

    fn check(expression: &str, item: &Attributes) -> bool {
        holds(&parse::condition(expression).unwrap(), item, &bindings()).unwrap()
    }

    #[test]
    fn numbers_compare_by_value_not_by_text() {
        let item = Attributes::from([("a".to_owned(), n(9))]);
        assert!(check("#a < :ten", &item));
        assert!(!check("#a >= :ten", &item));
        assert!(check("#a <> :one", &item));
    }

    #[test]
    fn an_absent_attribute_or_another_type_compares_false_and_not_flips_it() {
        let empty = Attributes::new();
        assert!(!check("#a = :one", &empty));
        assert!(!check("#a <= :one", &empty));
        assert!(check("NOT #a <= :one", &empty));
        assert!(!check("#a IN (:one, :x)", &empty));
        let text = Attributes::from([("a".to_owned(), s("1"))]);
        assert!(!check("#a = :one", &text));
        assert!(!check("attribute_type(#a, :num)", &text));
        assert!(check(
            "attribute_exists(#a) AND attribute_not_exists(#b)",
            &text
        ));
    }

    #[test]
    fn set_reads_the_item_before_the_update_and_remove_drops() {
        let item = Attributes::from([("a".to_owned(), n(3))]);
        let update = parse::update("SET #b = if_not_exists(#a, :one), #a = :ten").unwrap();
        let after = apply(&update, &item, &bindings()).unwrap();
        assert_eq!(after.get("a"), Some(&n(10)));
        assert_eq!(after.get("b"), Some(&n(3)));
        let update = parse::update("SET #b = if_not_exists(#b, :one) REMOVE #a").unwrap();
        let after = apply(&update, &item, &bindings()).unwrap();
        assert_eq!(after, Attributes::from([("b".to_owned(), n(1))]));
    }

    #[test]
    fn an_unbound_placeholder_is_an_error() {
        let condition = parse::condition("#zz = :one").unwrap();
        assert!(holds(&condition, &Attributes::new(), &bindings()).is_err());
    }
}
