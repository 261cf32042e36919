//! DynamoDB's reading of a conditional write, evaluated on the strings the store sends:
//! the model applies breaker's writes through this, so the model and the store share one
//! definition of each request (a change to a condition or update string changes what the
//! model explores). Only the constructs the store uses are understood; anything else is an
//! error that fails the check.

mod eval;
mod parse;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

pub use eval::{Attributes, Bindings};
pub use parse::ParseError;
use parse::{Condition, Operand, SetValue, Update};

/// What a request writes when its condition holds.
#[derive(Clone, Debug)]
pub enum Write {
    /// `PutItem`: the whole item.
    Put(Attributes),
    /// `UpdateItem`: its update expression.
    Update(String),
}

/// One conditional request, as sent.
#[derive(Clone, Debug)]
pub struct Request {
    pub condition: String,
    pub write: Write,
    pub bindings: Bindings,
}

thread_local! {
    static CONDITIONS: RefCell<HashMap<String, Condition>> = RefCell::default();
    static UPDATES: RefCell<HashMap<String, Update>> = RefCell::default();
}

fn cached<T: Clone>(
    cache: &'static std::thread::LocalKey<RefCell<HashMap<String, T>>>,
    expression: &str,
    parse: fn(&str) -> Result<T, ParseError>,
) -> Result<T, String> {
    if let Some(parsed) = cache.with(|c| c.borrow().get(expression).cloned()) {
        return Ok(parsed);
    }
    let parsed = parse(expression).map_err(|e| e.to_string())?;
    cache.with(|c| c.borrow_mut().insert(expression.to_owned(), parsed.clone()));
    Ok(parsed)
}

fn condition_placeholders(condition: &Condition, out: &mut HashSet<String>) {
    let mut operand = |o: &Operand| {
        out.insert(placeholder(o));
    };
    match condition {
        Condition::Or(a, b) | Condition::And(a, b) => {
            condition_placeholders(a, out);
            condition_placeholders(b, out);
        }
        Condition::Not(a) => condition_placeholders(a, out),
        Condition::Compare(a, _, b) | Condition::HasType(a, b) => {
            operand(a);
            operand(b);
        }
        Condition::In(a, list) => {
            operand(a);
            list.iter().for_each(operand);
        }
        Condition::Exists(a) | Condition::NotExists(a) => operand(a),
    }
}

fn update_placeholders(update: &Update, out: &mut HashSet<String>) {
    for (path, value) in &update.set {
        out.insert(placeholder(path));
        match value {
            SetValue::Operand(o) => {
                out.insert(placeholder(o));
            }
            SetValue::IfNotExists(a, b) => {
                out.insert(placeholder(a));
                out.insert(placeholder(b));
            }
        }
    }
    out.extend(update.remove.iter().map(placeholder));
}

fn placeholder(operand: &Operand) -> String {
    match operand {
        Operand::Name(n) => format!("#{n}"),
        Operand::Value(v) => format!(":{v}"),
    }
}

impl Request {
    /// The item the request leaves on `item` (`None`: absent), or `Ok(None)` when its
    /// condition fails. An error is a request DynamoDB would refuse (an expression it would
    /// not parse, a placeholder used but not bound or bound but not used) or one this
    /// reading does not understand.
    pub fn applied_to(&self, item: Option<&Attributes>) -> Result<Option<Attributes>, String> {
        let condition = cached(&CONDITIONS, &self.condition, parse::condition)?;
        let update = match &self.write {
            Write::Update(expression) => Some(cached(&UPDATES, expression, parse::update)?),
            Write::Put(_) => None,
        };
        self.check_placeholders(&condition, update.as_ref())?;
        let empty = Attributes::new();
        let current = item.unwrap_or(&empty);
        if !eval::holds(&condition, current, &self.bindings)? {
            return Ok(None);
        }
        match (&self.write, update) {
            (Write::Put(whole), _) => Ok(Some(whole.clone())),
            (Write::Update(_), Some(update)) => {
                eval::apply(&update, current, &self.bindings).map(Some)
            }
            (Write::Update(_), None) => unreachable!("an update is parsed above"),
        }
    }

    /// DynamoDB refuses a request whose expressions use a placeholder it does not bind, or
    /// that binds one they do not use.
    fn check_placeholders(
        &self,
        condition: &Condition,
        update: Option<&Update>,
    ) -> Result<(), String> {
        let mut used = HashSet::new();
        condition_placeholders(condition, &mut used);
        if let Some(update) = update {
            update_placeholders(update, &mut used);
        }
        let bound: HashSet<String> = self
            .bindings
            .names
            .keys()
            .chain(self.bindings.values.keys())
            .cloned()
            .collect();
        let mut unbound: Vec<_> = used.difference(&bound).collect();
        let mut unused: Vec<_> = bound.difference(&used).collect();
        unbound.sort();
        unused.sort();
        match (unbound.is_empty(), unused.is_empty()) {
            (true, true) => Ok(()),
            _ => Err(format!(
                "placeholders used but not bound: {unbound:?}; bound but not used: {unused:?}"
            )),
        }
    }
}
