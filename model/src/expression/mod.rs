//! DynamoDB's reading of a conditional write, evaluated on the strings the store sends:
//! the model applies breaker's writes through this, so the model and the store share one
//! definition of each request (a change to a condition or update string changes what the
//! model explores). Only the constructs the store uses are understood; anything else is an
//! error that fails the check.

mod eval;
mod parse;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

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

/// A parsed expression with the placeholders it uses.
struct Parsed<T> {
    tree: T,
    placeholders: HashSet<String>,
}

type Cache<T> = RefCell<HashMap<String, Rc<Parsed<T>>>>;

thread_local! {
    // The store sends a few dozen distinct strings; the checker evaluates them millions of
    // times.
    static CONDITIONS: Cache<Condition> = RefCell::default();
    static UPDATES: Cache<Update> = RefCell::default();
}

fn cached<T>(
    cache: &'static std::thread::LocalKey<Cache<T>>,
    expression: &str,
    parse: fn(&str) -> Result<T, ParseError>,
    placeholders: fn(&T, &mut HashSet<String>),
) -> Result<Rc<Parsed<T>>, String> {
    if let Some(parsed) = cache.with(|c| c.borrow().get(expression).cloned()) {
        return Ok(parsed);
    }
    let tree = parse(expression).map_err(|e| e.to_string())?;
    let mut used = HashSet::new();
    placeholders(&tree, &mut used);
    let parsed = Rc::new(Parsed {
        tree,
        placeholders: used,
    });
    cache.with(|c| {
        c.borrow_mut()
            .insert(expression.to_owned(), Rc::clone(&parsed))
    });
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
        Operand::Name(p) | Operand::Value(p) => p.clone(),
    }
}

impl Request {
    /// The item the request leaves on `item` (`None`: absent), or `Ok(None)` when its
    /// condition fails. An error is a request DynamoDB would refuse (an expression it would
    /// not parse, a placeholder used but not bound or bound but not used) or one this
    /// reading does not understand.
    pub fn applied_to(&self, item: Option<&Attributes>) -> Result<Option<Attributes>, String> {
        let condition = cached(
            &CONDITIONS,
            &self.condition,
            parse::condition,
            condition_placeholders,
        )?;
        let update = match &self.write {
            Write::Update(expression) => Some(cached(
                &UPDATES,
                expression,
                parse::update,
                update_placeholders,
            )?),
            Write::Put(_) => None,
        };
        self.check_placeholders(
            &condition.placeholders,
            update.as_ref().map(|u| &u.placeholders),
        )?;
        let empty = Attributes::new();
        let current = item.unwrap_or(&empty);
        if !eval::holds(&condition.tree, current, &self.bindings)? {
            return Ok(None);
        }
        match (&self.write, update) {
            (Write::Put(whole), _) => Ok(Some(whole.clone())),
            (Write::Update(_), Some(update)) => {
                eval::apply(&update.tree, current, &self.bindings).map(Some)
            }
            (Write::Update(_), None) => unreachable!("an update is parsed above"),
        }
    }

    /// DynamoDB refuses a request whose expressions use a placeholder it does not bind, or
    /// that binds one they do not use.
    fn check_placeholders(
        &self,
        condition: &HashSet<String>,
        update: Option<&HashSet<String>>,
    ) -> Result<(), String> {
        let used = |p: &String| condition.contains(p) || update.is_some_and(|u| u.contains(p));
        let bound = |p: &String| {
            self.bindings.names.contains_key(p) || self.bindings.values.contains_key(p)
        };
        let names = self.bindings.names.keys();
        let all_bound = names.chain(self.bindings.values.keys());
        let unused: Vec<_> = all_bound.filter(|p| !used(p)).collect();
        let unbound: Vec<_> = condition
            .iter()
            .chain(update.into_iter().flatten())
            .filter(|p| !bound(p))
            .collect();
        match (unbound.is_empty(), unused.is_empty()) {
            (true, true) => Ok(()),
            _ => Err(format!(
                "placeholders used but not bound: {unbound:?}; bound but not used: {unused:?}"
            )),
        }
    }
}
