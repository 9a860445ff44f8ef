//! The jaq sandbox: which filters exist, and the budget that bounds them.
//!
//! jaq has no fuel counter, so the budget is woven into the program before
//! it is compiled. Every definition body (the user's and the standard
//! library's) starts with a `__extpool_tick` call, every path that
//! iterates (`.[]`, `..`) and every `range` output passes one, and `+` /
//! `*` go through checked natives that refuse to build oversized values.
//! A tick counts a step, checks the deadline, the stack depth and the size
//! of the value passing through. Once the budget trips it stays tripped:
//! every later tick fails, so `try` cannot swallow it, and the caller reads
//! the typed cause from the budget, not from a message.
//!
//! Filters that touch the outside world are not installed: `env`, `$ENV`,
//! `input`, `inputs`, `now`, `localtime`, `strflocaltime`, `halt`,
//! `debug`, `stderr`, module `import`/`include` (the user's filter is
//! parsed as a single term, and the loader cannot read files).

use std::cell::Cell;
use std::time::Instant;

use jaq_core::box_iter::{BoxIter, box_once};
use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::native::{Fun, v};
use jaq_core::path::{Part, Path};
use jaq_core::{DataT, Exn, Native, ops};
use jaq_json::{Num, Val};

/// Native names installed by the sandbox.
pub(super) const TICK: &str = "__extpool_tick";
const ADD: &str = "__extpool_add";
const MUL: &str = "__extpool_mul";
/// Variable used to rewrite `l += r` as `r as $v | l |= __extpool_add(.; $v)`.
const UPDATE_VAR: &str = "$__extpool_v";

/// Natives that reach outside the process, or that we replace.
const WITHHELD_NATIVES: &[&str] = &[
    "env",
    "now",
    "localtime",
    "strflocaltime",
    "halt",
    "debug_empty",
    "stderr_empty",
    "input",
    "inputs",
    "range",
    "fromjson",
];
/// Deepest JSON `fromjson` parses (jaq's parser recurses once per level).
pub(super) const MAX_JSON_DEPTH: usize = 512;
/// Standard definitions that depend on withheld natives.
const WITHHELD_DEFS: &[&str] = &["stderr", "debug", "halt", "halt_error"];

/// Why the budget tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trip {
    Steps,
    Time,
    Stack,
    Value,
}

/// The per-run budget, shared by every native through the context data.
#[derive(Debug)]
pub(super) struct Budget {
    steps: Cell<u64>,
    max_steps: u64,
    deadline: Instant,
    stack_base: usize,
    max_stack: usize,
    max_value_bytes: usize,
    max_int_bits: u64,
    tripped: Cell<Option<Trip>>,
}

/// The address of a local: how deep the evaluation thread's stack is.
#[inline(always)]
fn stack_position() -> usize {
    let probe = 0u8;
    std::hint::black_box(std::ptr::addr_of!(probe)) as usize
}

impl Budget {
    pub(super) fn new(
        max_steps: u64,
        deadline: Instant,
        max_stack: usize,
        max_value_bytes: usize,
    ) -> Self {
        Self {
            steps: Cell::new(0),
            max_steps,
            deadline,
            stack_base: stack_position(),
            max_stack,
            max_value_bytes,
            max_int_bits: (max_value_bytes as u64).saturating_mul(8).min(1 << 20),
            tripped: Cell::new(None),
        }
    }

    pub(super) fn tripped(&self) -> Option<Trip> {
        self.tripped.get()
    }

    pub(super) fn steps(&self) -> u64 {
        self.steps.get()
    }

    fn trip(&self, why: Trip) -> jaq_core::Error<Val> {
        if self.tripped.get().is_none() {
            self.tripped.set(Some(why));
        }
        jaq_core::Error::str("extpool: jq budget exhausted")
    }

    /// One step: count, check time, stack and the size of `v`.
    fn tick(&self, v: &Val) -> Result<(), jaq_core::Error<Val>> {
        if let Some(why) = self.tripped.get() {
            return Err(self.trip(why));
        }
        let n = self.steps.get() + 1;
        self.steps.set(n);
        if n > self.max_steps {
            return Err(self.trip(Trip::Steps));
        }
        if n.is_multiple_of(256) && Instant::now() >= self.deadline {
            return Err(self.trip(Trip::Time));
        }
        if self.stack_base.abs_diff(stack_position()) > self.max_stack {
            return Err(self.trip(Trip::Stack));
        }
        if value_size(v) > self.max_value_bytes {
            return Err(self.trip(Trip::Value));
        }
        Ok(())
    }
}

/// A cheap (O(1)) size estimate: bytes of a string, elements of a container.
fn value_size(v: &Val) -> usize {
    match v {
        Val::TStr(b) | Val::BStr(b) => b.len(),
        Val::Arr(a) => a.len(),
        Val::Obj(o) => o.len(),
        _ => 0,
    }
}

fn int_bits(v: &Val) -> u64 {
    match v {
        Val::Num(Num::BigInt(i)) => i.bits(),
        Val::Num(Num::Int(_)) => 64,
        _ => 0,
    }
}

/// The data natives can see: the lookup table and the budget.
#[derive(Clone)]
pub(super) struct Data<'a> {
    lut: &'a jaq_core::Lut<Sandbox>,
    budget: &'a Budget,
}

impl<'a> Data<'a> {
    pub(super) fn new(lut: &'a jaq_core::Lut<Sandbox>, budget: &'a Budget) -> Self {
        Self { lut, budget }
    }
}

impl<'a> jaq_core::data::HasLut<'a, Sandbox> for Data<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<Sandbox> {
        self.lut
    }
}

/// The data kind of sandboxed filters: JSON values plus a budget.
pub(super) struct Sandbox;

impl DataT for Sandbox {
    type V<'a> = Val;
    type Data<'a> = Data<'a>;
}

type Ex<'a> = jaq_core::ValX<'a, Val>;
type Out<'a> = jaq_core::ValXs<'a, <Sandbox as DataT>::V<'a>>;

fn fail<'a>(e: jaq_core::Error<Val>) -> BoxIter<'a, Ex<'a>> {
    box_once(Err(Exn::from(e)))
}

/// The checked `+`: refuses a result larger than the value limit.
fn add<'a>(mut cv: jaq_core::Cv<'a, Sandbox>) -> Out<'a> {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    let budget = cv.0.data().budget;
    if let Err(e) = budget.tick(&l) {
        return fail(e);
    }
    let grows = matches!(
        (&l, &r),
        (Val::TStr(_) | Val::BStr(_), Val::TStr(_) | Val::BStr(_))
            | (Val::Arr(_), Val::Arr(_))
            | (Val::Obj(_), Val::Obj(_))
    );
    if grows && value_size(&l).saturating_add(value_size(&r)) > budget.max_value_bytes {
        return fail(budget.trip(Trip::Value));
    }
    box_once((l + r).map_err(Exn::from))
}

/// The checked `*`: refuses string repetition and integer products above the limits.
fn mul<'a>(mut cv: jaq_core::Cv<'a, Sandbox>) -> Out<'a> {
    let r = cv.0.pop_var();
    let l = cv.0.pop_var();
    let budget = cv.0.data().budget;
    if let Err(e) = budget.tick(&l) {
        return fail(e);
    }
    let repeat = |s: &Val, n: &Val| -> Option<u128> {
        let len = value_size(s) as u128;
        match n {
            Val::Num(Num::Int(i)) => Some(len * (*i).max(0) as u128),
            Val::Num(Num::BigInt(_)) => Some(u128::MAX),
            Val::Num(Num::Float(f)) => Some(len.saturating_mul(f.clamp(0.0, 1e30) as u128)),
            Val::Num(Num::Dec(_)) => Some(u128::MAX),
            _ => None,
        }
    };
    let too_big = match (&l, &r) {
        (s @ (Val::TStr(_) | Val::BStr(_)), n) | (n, s @ (Val::TStr(_) | Val::BStr(_))) => {
            repeat(s, n).is_some_and(|bytes| bytes > budget.max_value_bytes as u128)
        }
        (Val::Num(_), Val::Num(_)) => {
            int_bits(&l).saturating_add(int_bits(&r)) > budget.max_int_bits
        }
        _ => false,
    };
    if too_big {
        return fail(budget.trip(Trip::Value));
    }
    box_once((l * r).map_err(Exn::from))
}

/// `range($from; $upto; $by)` with one tick per output.
fn range<'a>(mut cv: jaq_core::Cv<'a, Sandbox>) -> Out<'a> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let by = cv.0.pop_var();
    let to = cv.0.pop_var();
    let from = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let cmp = by.partial_cmp(&Val::from(0usize)).unwrap_or(Equal);
    let mut next = Some(from);
    Box::new(std::iter::from_fn(move || {
        let x = next.take()?;
        let go = match cmp {
            Greater => x < to,
            Less => x > to,
            Equal => x != to,
        };
        if !go {
            return None;
        }
        if let Err(e) = budget.tick(&x) {
            return Some(Err(Exn::from(e)));
        }
        match x.clone() + by.clone() {
            Ok(n) => next = Some(n),
            Err(e) => return Some(Err(Exn::from(e))),
        }
        Some(Ok(x))
    }))
}

/// The deepest bracket nesting in JSON text (strings skipped).
pub(super) fn nesting_depth(text: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// `fromjson` with a nesting limit, so a hostile string cannot exhaust the stack.
fn fromjson<'a>(cv: jaq_core::Cv<'a, Sandbox>) -> Out<'a> {
    let budget = cv.0.data().budget;
    if let Err(e) = budget.tick(&cv.1) {
        return fail(e);
    }
    let bytes = match &cv.1 {
        Val::TStr(b) | Val::BStr(b) => b.clone(),
        other => return fail(jaq_core::Error::typ(other.clone(), "string")),
    };
    if nesting_depth(&bytes) > MAX_JSON_DEPTH {
        return fail(jaq_core::Error::str(format!(
            "cannot parse as JSON: nested deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    // The parser keeps yielding the same error once it fails: stop there.
    let mut values: Vec<Ex<'a>> = Vec::new();
    for item in jaq_json::read::parse_many(&bytes) {
        match item {
            Ok(v) => {
                // Each parsed value is a step: "1 1 1 …" cannot flood memory.
                if let Err(e) = budget.tick(&v) {
                    values.push(Err(Exn::from(e)));
                    break;
                }
                values.push(Ok(v));
            }
            Err(e) => {
                let msg = format!("cannot parse as JSON: {e}");
                values.push(Err(Exn::from(jaq_core::Error::str(msg))));
                break;
            }
        }
    }
    Box::new(values.into_iter())
}

/// Every native the sandbox installs.
pub(super) fn natives() -> Vec<Fun<Sandbox>> {
    let tick = Native::<Sandbox>::new(|cv| {
        let budget = cv.0.data().budget;
        match budget.tick(&cv.1) {
            Ok(()) => box_once(Ok(cv.1)),
            Err(e) => fail(e),
        }
    })
    .with_paths(|cv| {
        let budget = cv.0.data().budget;
        match budget.tick(&cv.1.0) {
            Ok(()) => box_once(Ok(cv.1)),
            Err(e) => box_once(Err(Exn::from(e))),
        }
    })
    .with_update(|cv, f| {
        let budget = cv.0.data().budget;
        match budget.tick(&cv.1) {
            Ok(()) => f(cv.1),
            Err(e) => fail(e),
        }
    });
    let ours: Vec<Fun<Sandbox>> = vec![
        (TICK, v(0), tick),
        (ADD, v(2), Native::<Sandbox>::new(add)),
        (MUL, v(2), Native::<Sandbox>::new(mul)),
        ("range", v(3), Native::<Sandbox>::new(range)),
        ("fromjson", v(0), Native::<Sandbox>::new(fromjson)),
    ];
    jaq_core::funs::<Sandbox>()
        .chain(jaq_std::funs::<Sandbox>())
        .chain(jaq_json::funs::<Sandbox>())
        .filter(|(name, _, _)| !WITHHELD_NATIVES.contains(name))
        .chain(ours)
        .collect()
}

/// The standard definitions, instrumented, without the withheld ones.
pub(super) fn prelude<'s>() -> impl Iterator<Item = Def<&'s str>> {
    jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .filter(|d| !WITHHELD_DEFS.contains(&d.name))
        .map(|d: Def<&'static str>| -> Def<&'s str> { instrument_def(d) })
}

fn call<'s>(name: &'s str, args: Vec<Term<&'s str>>) -> Term<&'s str> {
    Term::Call(name, args)
}

fn pipe<S>(l: Term<S>, r: Term<S>) -> Term<S> {
    Term::BinOp(Box::new(l), BinaryOp::Pipe(None), Box::new(r))
}

/// A definition whose body ticks first (tail calls stay tail calls).
pub(super) fn instrument_def(d: Def<&str>) -> Def<&str> {
    Def {
        name: d.name,
        args: d.args,
        body: pipe(call(TICK, Vec::new()), instrument(d.body)),
    }
}

fn instrument_path(path: Path<Term<&str>>) -> (Path<Term<&str>>, bool) {
    let mut iterates = false;
    let parts = path
        .0
        .into_iter()
        .map(|(part, opt)| {
            let part = match part {
                Part::Index(i) => Part::Index(instrument(i)),
                Part::Range(from, to) => {
                    iterates |= from.is_none() && to.is_none();
                    Part::Range(from.map(instrument), to.map(instrument))
                }
            };
            (part, opt)
        })
        .collect();
    (Path(parts), iterates)
}

fn instrument_pattern(p: Pattern<&str>) -> Pattern<&str> {
    match p {
        Pattern::Var(x) => Pattern::Var(x),
        Pattern::Arr(ps) => Pattern::Arr(ps.into_iter().map(instrument_pattern).collect()),
        Pattern::Obj(kps) => Pattern::Obj(
            kps.into_iter()
                .map(|(k, p)| (instrument(k), instrument_pattern(p)))
                .collect(),
        ),
    }
}

/// Weaves the budget into a term (see the module docs).
pub(super) fn instrument<'s>(t: Term<&'s str>) -> Term<&'s str> {
    let b = |t: Box<Term<&'s str>>| Box::new(instrument(*t));
    match t {
        Term::Recurse => pipe(Term::Recurse, call(TICK, Vec::new())),
        Term::Str(fmt, parts) => Term::Str(
            fmt,
            parts
                .into_iter()
                .map(|p| match p {
                    StrPart::Term(t) => StrPart::Term(instrument(t)),
                    other => other,
                })
                .collect(),
        ),
        Term::Arr(a) => Term::Arr(a.map(b)),
        Term::Obj(kvs) => Term::Obj(
            kvs.into_iter()
                .map(|(k, v)| (instrument(k), v.map(instrument)))
                .collect(),
        ),
        Term::Neg(t) => Term::Neg(b(t)),
        Term::BinOp(l, BinaryOp::Math(op @ (ops::Math::Add | ops::Math::Mul)), r) => {
            let name = if op == ops::Math::Add { ADD } else { MUL };
            call(name, vec![instrument(*l), instrument(*r)])
        }
        Term::BinOp(l, BinaryOp::UpdateMath(op @ (ops::Math::Add | ops::Math::Mul)), r) => {
            // `l op= r` is `r as $v | l |= . op $v`.
            let name = if op == ops::Math::Add { ADD } else { MUL };
            let update = Term::BinOp(
                b(l),
                BinaryOp::Update,
                Box::new(call(name, vec![Term::Id, Term::Var(UPDATE_VAR)])),
            );
            Term::BinOp(
                b(r),
                BinaryOp::Pipe(Some(Pattern::Var(UPDATE_VAR))),
                Box::new(update),
            )
        }
        Term::BinOp(l, BinaryOp::Pipe(Some(p)), r) => {
            Term::BinOp(b(l), BinaryOp::Pipe(Some(instrument_pattern(p))), b(r))
        }
        Term::BinOp(l, op, r) => Term::BinOp(b(l), op, b(r)),
        Term::Label(x, t) => Term::Label(x, b(t)),
        Term::Fold(name, xs, pat, args) => Term::Fold(
            name,
            b(xs),
            instrument_pattern(pat),
            args.into_iter().map(instrument).collect(),
        ),
        Term::TryCatch(t, c) => Term::TryCatch(b(t), c.map(b)),
        Term::IfThenElse(branches, els) => Term::IfThenElse(
            branches
                .into_iter()
                .map(|(c, t)| (instrument(c), instrument(t)))
                .collect(),
            els.map(b),
        ),
        Term::Def(defs, t) => Term::Def(defs.into_iter().map(instrument_def).collect(), b(t)),
        Term::Call(name, args) => Term::Call(name, args.into_iter().map(instrument).collect()),
        Term::Path(t, path) => {
            let (path, iterates) = instrument_path(path);
            let t = Term::Path(b(t), path);
            if iterates {
                pipe(t, call(TICK, Vec::new()))
            } else {
                t
            }
        }
        other @ (Term::Id | Term::Num(_) | Term::Break(_) | Term::Var(_)) => other,
    }
}
