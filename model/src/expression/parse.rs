//! The grammar of the DynamoDB expressions the store sends, parsed into trees: condition
//! expressions (comparisons, `IN`, `AND`/`OR`/`NOT`, `attribute_exists`,
//! `attribute_not_exists`, `attribute_type`) and update expressions (`SET` with
//! `if_not_exists`, `REMOVE`). Anything else is an error, so that a construct the store
//! starts to send fails the check instead of being read as something it is not.

use std::fmt;

/// A placeholder: `#name` for an attribute, `:value` for a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// `#st` (with its `#`): an attribute, through `ExpressionAttributeNames`.
    Name(String),
    /// `:now` (with its `:`): a value, through `ExpressionAttributeValues`.
    Value(String),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparator {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A condition expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    Or(Box<Condition>, Box<Condition>),
    And(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
    Compare(Operand, Comparator, Operand),
    In(Operand, Vec<Operand>),
    Exists(Operand),
    NotExists(Operand),
    HasType(Operand, Operand),
}

/// The right-hand side of a `SET` action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetValue {
    Operand(Operand),
    IfNotExists(Operand, Operand),
}

/// An update expression: its `SET` actions and its `REMOVE`d attributes, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Update {
    pub set: Vec<(Operand, SetValue)>,
    pub remove: Vec<Operand>,
}

/// Why an expression did not parse: the expression and what was found where.
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub expression: String,
    pub problem: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in `{}`", self.problem, self.expression)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Name(String),
    Value(String),
    Open,
    Close,
    Comma,
    Op(Comparator),
}

fn tokens(expression: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = expression.chars().peekable();
    while let Some(&c) = chars.peek() {
        let word = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
            let mut w = String::new();
            while let Some(&c) = chars.peek() {
                if !(c.is_ascii_alphanumeric() || c == '_') {
                    break;
                }
                w.push(c);
                chars.next();
            }
            w
        };
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' => {
                chars.next();
                out.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    _ => Token::Comma,
                });
            }
            '#' | ':' => {
                chars.next();
                let w = word(&mut chars);
                if w.is_empty() {
                    return Err(format!("an empty placeholder after `{c}`"));
                }
                // Kept with their sigil: the bindings are keyed so.
                out.push(match c {
                    '#' => Token::Name(format!("#{w}")),
                    _ => Token::Value(format!(":{w}")),
                });
            }
            '=' | '<' | '>' => {
                chars.next();
                let next = chars.peek().copied();
                let op = match (c, next) {
                    ('<', Some('=')) => Comparator::Le,
                    ('>', Some('=')) => Comparator::Ge,
                    ('<', Some('>')) => Comparator::Ne,
                    ('=', _) => Comparator::Eq,
                    ('<', _) => Comparator::Lt,
                    _ => Comparator::Gt,
                };
                if matches!(op, Comparator::Le | Comparator::Ge | Comparator::Ne) {
                    chars.next();
                }
                out.push(Token::Op(op));
            }
            c if c.is_ascii_alphabetic() => out.push(Token::Word(word(&mut chars))),
            other => return Err(format!("an unexpected character `{other}`")),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn keyword(&mut self, word: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word));
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, token: Token) -> Result<(), String> {
        match self.next() {
            Some(found) if found == token => Ok(()),
            found => Err(format!("expected {token:?}, found {found:?}")),
        }
    }

    fn operand(&mut self) -> Result<Operand, String> {
        match self.next() {
            Some(Token::Name(n)) => Ok(Operand::Name(n)),
            Some(Token::Value(v)) => Ok(Operand::Value(v)),
            found => Err(format!("expected a placeholder, found {found:?}")),
        }
    }

    fn or(&mut self) -> Result<Condition, String> {
        let mut left = self.and()?;
        while self.keyword("OR") {
            left = Condition::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Condition, String> {
        let mut left = self.not()?;
        while self.keyword("AND") {
            left = Condition::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Condition, String> {
        match self.keyword("NOT") {
            true => Ok(Condition::Not(Box::new(self.not()?))),
            false => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Condition, String> {
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let inner = self.or()?;
            self.expect(Token::Close)?;
            return Ok(inner);
        }
        if let Some(Token::Word(function)) = self.peek().cloned() {
            self.at += 1;
            self.expect(Token::Open)?;
            let path = self.operand()?;
            let condition = match function.as_str() {
                "attribute_exists" => Condition::Exists(path),
                "attribute_not_exists" => Condition::NotExists(path),
                "attribute_type" => {
                    self.expect(Token::Comma)?;
                    Condition::HasType(path, self.operand()?)
                }
                other => return Err(format!("an unknown function `{other}`")),
            };
            self.expect(Token::Close)?;
            return Ok(condition);
        }
        let left = self.operand()?;
        if self.keyword("IN") {
            self.expect(Token::Open)?;
            let mut list = vec![self.operand()?];
            while self.peek() == Some(&Token::Comma) {
                self.at += 1;
                list.push(self.operand()?);
            }
            self.expect(Token::Close)?;
            return Ok(Condition::In(left, list));
        }
        match self.next() {
            Some(Token::Op(op)) => Ok(Condition::Compare(left, op, self.operand()?)),
            found => Err(format!("expected a comparison, found {found:?}")),
        }
    }

    fn set_value(&mut self) -> Result<SetValue, String> {
        if self.keyword("if_not_exists") {
            self.expect(Token::Open)?;
            let path = self.operand()?;
            self.expect(Token::Comma)?;
            let default = self.operand()?;
            self.expect(Token::Close)?;
            return Ok(SetValue::IfNotExists(path, default));
        }
        Ok(SetValue::Operand(self.operand()?))
    }

    fn update(&mut self) -> Result<Update, String> {
        let mut update = Update::default();
        while self.peek().is_some() {
            if self.keyword("SET") {
                loop {
                    let path = self.operand()?;
                    self.expect(Token::Op(Comparator::Eq))?;
                    update.set.push((path, self.set_value()?));
                    if self.peek() != Some(&Token::Comma) {
                        break;
                    }
                    self.at += 1;
                }
            } else if self.keyword("REMOVE") {
                loop {
                    update.remove.push(self.operand()?);
                    if self.peek() != Some(&Token::Comma) {
                        break;
                    }
                    self.at += 1;
                }
            } else {
                return Err(format!("expected SET or REMOVE, found {:?}", self.peek()));
            }
        }
        Ok(update)
    }

    fn finish<T>(self, parsed: T) -> Result<T, String> {
        match self.tokens.get(self.at) {
            None => Ok(parsed),
            Some(rest) => Err(format!("unexpected {rest:?} after the expression")),
        }
    }
}

fn parse<T>(
    expression: &str,
    rule: impl FnOnce(&mut Parser) -> Result<T, String>,
) -> Result<T, ParseError> {
    let error = |problem| ParseError {
        expression: expression.to_owned(),
        problem,
    };
    let mut parser = Parser {
        tokens: tokens(expression).map_err(error)?,
        at: 0,
    };
    let parsed = rule(&mut parser).map_err(error)?;
    parser.finish(parsed).map_err(error)
}

/// Parses a condition expression.
pub fn condition(expression: &str) -> Result<Condition, ParseError> {
    parse(expression, Parser::or)
}

/// Parses an update expression.
pub fn update(expression: &str) -> Result<Update, ParseError> {
    parse(expression, Parser::update)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Operand {
        Operand::Name(format!("#{n}"))
    }

    fn value(v: &str) -> Operand {
        Operand::Value(format!(":{v}"))
    }

    #[test]
    fn and_binds_tighter_than_or_and_not_tighter_than_and() {
        let parsed = condition("NOT #a = :x AND #b <= :y OR attribute_exists(#c)").unwrap();
        let a = Condition::Not(Box::new(Condition::Compare(
            name("a"),
            Comparator::Eq,
            value("x"),
        )));
        let b = Condition::Compare(name("b"), Comparator::Le, value("y"));
        let expected = Condition::Or(
            Box::new(Condition::And(Box::new(a), Box::new(b))),
            Box::new(Condition::Exists(name("c"))),
        );
        assert_eq!(parsed, expected);
    }

    #[test]
    fn in_lists_and_types_parse() {
        assert_eq!(
            condition("NOT (#st IN (:a, :b)) OR attribute_type(#fc, :num)").unwrap(),
            Condition::Or(
                Box::new(Condition::Not(Box::new(Condition::In(
                    name("st"),
                    vec![value("a"), value("b")]
                )))),
                Box::new(Condition::HasType(name("fc"), value("num"))),
            )
        );
    }

    #[test]
    fn updates_keep_their_actions_in_order() {
        let parsed = update("SET #a = :x, #b = if_not_exists(#b, :zero) REMOVE #c, #d").unwrap();
        assert_eq!(
            parsed.set,
            [
                (name("a"), SetValue::Operand(value("x"))),
                (name("b"), SetValue::IfNotExists(name("b"), value("zero"))),
            ]
        );
        assert_eq!(parsed.remove, [name("c"), name("d")]);
    }

    #[test]
    fn unknown_constructs_are_errors() {
        assert!(condition("begins_with(#a, :x)").is_err());
        assert!(condition("#a BETWEEN :x AND :y").is_err());
        assert!(update("ADD #a :one").is_err());
        assert!(update("SET #a = #a + :one").is_err());
        assert!(condition("#a = :x)").is_err());
    }
}
