//! Flows (docs/FLOWS.md): a scenario whose requests are [`Step`]s that a virtual user
//! runs in order with its own [`UserState`] (variables, a [`CookieJar`], a data row).
//!
//! - [`StepFields`]: a `[[scenario.step]]` table as written; [`Flow::compile`] checks
//!   the steps of one scenario into a [`Flow`], naming the file, line, step and field
//!   of any mistake (an unknown variable, an expression that does not parse).
//! - [`Flow::judge`]: after an answer, keeps its cookies, extracts its variables and
//!   judges its [`Check`]s into a [`Verdict`], on the bytes the engine already read.
//! - [`Flow::advance`]: which step comes next and after how long a think, or the end of
//!   the user's run of the flow.
//!
//! The engine owns the users and their timers; everything here is pure.

use std::collections::BTreeMap;
use std::path::Path;

use regex::bytes::{CaptureLocations, Regex};

use crate::answer::Answer;
use crate::check::Check;
use crate::cookies::{CookieJar, CookieRefusal, CookieUrl};
use crate::json_path::{JsonPath, write_value};
use crate::rng::Rng;
use crate::step_fields::{CheckField, ExtractField, StepFields};
use crate::target::{
    Header, Target, check_body_with, check_header_with, check_method, check_target_url_with,
};
use crate::template::is_variable_name;
use crate::{Origin, Template, TypeSource, WorkloadError};

mod grpc_step;
mod stream;

pub use grpc_step::{DecodeFailure, GrpcCall};
pub use stream::{
    Action, ActionKind, EventStream, Pace, PaceTimes, SendTime, Stream, StreamTarget, WebSocket,
};

/// Variables one flow may extract (one bit each in [`UserState`]).
pub const MAX_VARIABLES: usize = 64;
/// Body bytes kept for checks and extraction unless `check_body_limit` says otherwise.
pub const DEFAULT_CHECK_BODY_LIMIT: u64 = 1 << 20;

/// Flow-wide options, from the scenario's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowOptions {
    /// A failed check makes its request a failure.
    pub checks_fail_requests: bool,
    /// Each user keeps a cookie jar.
    pub cookies: bool,
    /// Body bytes kept for checks and extraction.
    pub check_body_limit: u64,
}

impl Default for FlowOptions {
    fn default() -> FlowOptions {
        FlowOptions {
            checks_fail_requests: true,
            cookies: true,
            check_body_limit: DEFAULT_CHECK_BODY_LIMIT,
        }
    }
}

/// A checked flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The steps, in order; step `i` is the attack's target `i`.
    pub steps: Vec<Step>,
    /// Every variable a step extracts, in order of first extraction.
    pub variables: Vec<String>,
    /// Its options.
    pub options: FlowOptions,
    /// Regex extractions, for [`FlowScratch`].
    regexes: Vec<Regex>,
    /// The targets of stream steps' actions and events, after the steps' own (target
    /// `steps.len() + i` is `stream_targets[i]`).
    pub stream_targets: Vec<StreamTarget>,
}

/// One step, checked.
#[derive(Debug, Clone)]
pub struct Step {
    /// Its name.
    pub name: String,
    /// Its request.
    pub target: Target,
    /// Variables taken from its answer.
    pub extractions: Vec<Extraction>,
    /// Its checks, at most [`MAX_CHECKS`] (31: one bit each in a record).
    pub checks: Vec<Check>,
    /// The pause after its answer.
    pub think: Think,
    /// Times in a row it is sent.
    pub repeat: u32,
    /// When it runs at all.
    pub condition: Option<Condition>,
    /// The variables its request reads (bit per variable).
    pub needs: u64,
    /// Whether its checks or extractions read the body.
    pub reads_body: bool,
    /// A step that holds its connection open (`ws`, `sse`) instead of one request.
    pub stream: Option<Stream>,
    /// A step that calls a gRPC method: how its answer is read.
    pub grpc: Option<GrpcCall>,
}

/// A variable taken from an answer.
#[derive(Debug, Clone)]
pub struct Extraction {
    /// Index into [`Flow::variables`].
    pub variable: u16,
    /// The expression as written (error texts name it).
    pub text: String,
    /// Finding nothing is not an error.
    pub optional: bool,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Json(JsonPath),
    /// Index into the flow's regexes.
    Regex(usize),
    Header(String),
    Cookie(String),
}

/// The pause after a step's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    /// None.
    None,
    /// Always this long.
    ConstantNs(u64),
    /// Uniform between the two.
    UniformNs(u64, u64),
    /// Exponential with this mean.
    ExponentialNs(u64),
}

/// When a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// The variable was extracted in this run of the flow.
    Extracted(u16),
    /// Check `check` of step `step` passed on its last answer in this run.
    Passed {
        /// The step.
        step: usize,
        /// The check.
        check: usize,
    },
}

/// A virtual user: its number, where it is in its flow, and what it keeps.
#[derive(Debug, Clone, Default)]
pub struct UserState {
    /// Run-wide number (its data row).
    pub number: u64,
    /// The step it is on.
    pub step: usize,
    /// Sends of the current step still to come after this one.
    pub repeats_left: u32,
    /// Variables' values, by index; valid where `extracted` has the bit.
    pub variables: Vec<Vec<u8>>,
    /// Which variables this run of the flow extracted.
    pub extracted: u64,
    /// Its cookies.
    pub jar: CookieJar,
    /// Per step, the checks that failed on its last answer in this run.
    failed: Vec<u32>,
    /// Random draws taken (think times, `[*]` picks).
    draws: u64,
}

/// Per engine thread: regex match positions, a string buffer.
pub struct FlowScratch {
    locations: Vec<CaptureLocations>,
    text: Vec<u8>,
    /// A gRPC step's answer as JSON.
    json: Vec<u8>,
}

/// Why the flow judged an answer a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowFailure {
    /// Extraction `extraction` of the step found nothing.
    Extract {
        /// Index in the step's extractions.
        extraction: usize,
    },
    /// Check `check` of the step failed (and checks fail requests).
    Check {
        /// Index in the step's checks.
        check: usize,
    },
    /// A `Set-Cookie` was refused.
    Cookie(CookieRefusal),
    /// Regex extraction `extraction` of the step stopped at a byte that is not UTF-8
    /// (the pattern reads text): its value would be cut short, so it is not taken.
    NotText {
        /// Index in the step's extractions.
        extraction: usize,
    },
    /// A gRPC step's answer could not be read as its messages.
    Decode(DecodeFailure),
}

/// What an extraction made of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extracted {
    Value,
    Nothing,
    /// A regex match ended where the answer stops being UTF-8.
    NotText,
}

/// What the flow made of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The step's checks that failed (bit per check).
    pub checks_failed: u32,
    /// Why the answer is a failure, if the flow judged it one.
    pub failure: Option<FlowFailure>,
}

/// What a user does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send step `step` after `delay_ns`.
    Step {
        /// The step.
        step: usize,
        /// The think time before it.
        delay_ns: u64,
    },
    /// This run of the flow is over; the last think was `delay_ns`.
    End {
        /// The think time after the last step.
        delay_ns: u64,
    },
}

impl Flow {
    /// Checks `steps` (a scenario's `step` tables) into a flow. `origin` names the
    /// scenario in errors; `headers` are the scenario's own for every step.
    pub fn compile(
        steps: &[StepFields],
        options: FlowOptions,
        headers: &[Header],
        origin: &Origin,
        read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
    ) -> Result<Flow, WorkloadError> {
        let mut types = TypeSource::default();
        Flow::compile_with(steps, options, headers, origin, read_body, &mut types)
    }

    /// [`Flow::compile`], its gRPC steps' types from `types` (the scenario's `.proto`
    /// files, or the servers' reflection) unless a step names its own.
    pub fn compile_with(
        steps: &[StepFields],
        options: FlowOptions,
        headers: &[Header],
        origin: &Origin,
        read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
        types: &mut TypeSource,
    ) -> Result<Flow, WorkloadError> {
        let mut flow = Flow {
            steps: Vec::with_capacity(steps.len()),
            variables: Vec::new(),
            options,
            regexes: Vec::new(),
            stream_targets: Vec::new(),
        };
        for (index, fields) in steps.iter().enumerate() {
            let step = flow
                .compile_step(index, fields, headers, origin, read_body, types)
                .map_err(|reason| step_error(origin, index, fields, reason))?;
            flow.steps.push(step);
        }
        flow.number_stream_targets();
        Ok(flow)
    }

    fn compile_step(
        &mut self,
        index: usize,
        fields: &StepFields,
        headers: &[Header],
        origin: &Origin,
        read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
        types: &mut TypeSource,
    ) -> Result<Step, String> {
        let name = step_name(index, fields)?;
        if self.steps.iter().any(|s| s.name == name) {
            return Err(format!("name: {name:?} is used by another step"));
        }
        let known = self.variables.clone();
        let streamed = fields.ws.is_some() || fields.sse.is_some() || fields.stream.is_some();
        let (target, stream, grpc) = match (&fields.request, streamed) {
            (Some(request), false) => {
                refuse_stream_keys(fields)?;
                let mut lines = request_lines(request);
                let first = lines.next().ok_or("request: empty (want METHOD URL)")?;
                if let Some(rest) = grpc_step::grpc_line(first) {
                    let (target, call) = grpc_step::parse_call_step(
                        rest, lines, fields, headers, &known, origin, read_body, types,
                    )?;
                    (target, None, Some(call))
                } else {
                    grpc_step::refuse_proto_keys(fields)?;
                    let target = parse_request_lines(
                        first,
                        lines,
                        fields.body.as_deref(),
                        headers,
                        &known,
                        origin,
                        read_body,
                    )?;
                    (target, None, None)
                }
            }
            (None, false) => {
                return Err("request: every step needs one (or ws, sse, stream)".to_owned());
            }
            (None, true) => {
                grpc_step::refuse_proto_keys(fields)?;
                let (target, stream) =
                    self.stream_step(fields, headers, &known, origin, read_body)?;
                (target, Some(stream), None)
            }
            (Some(_), true) => {
                return Err("request: a step has one of request, ws, sse and stream".to_owned());
            }
        };
        let needs =
            needed_variables(&target, &known)? | stream.as_ref().map_or(0, Flow::stream_needs);
        let condition = fields
            .condition
            .as_deref()
            .map(|text| self.condition(text, &known))
            .transpose()
            .map_err(|reason| format!("if: {reason}"))?;
        let checks = parse_checks(&fields.checks)?;
        let extractions = self.extractions(&fields.extract)?;
        check_reads(grpc.is_some(), &checks, &extractions)?;
        let typed = matches!(stream, Some(Stream::Events(_)));
        if let Some(check) = checks.iter().find(|c| c.event.is_some() && !typed) {
            return Err(format!(
                "checks: {:?}: only an sse or stream step's events have a type",
                check.name
            ));
        }
        let reads_body = checks.iter().any(Check::reads_body)
            || extractions
                .iter()
                .any(|e| matches!(e.source, Source::Json(_) | Source::Regex(_)));
        let repeat = fields.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err("repeat: must be at least 1".to_owned());
        }
        Ok(Step {
            name,
            target,
            extractions,
            checks,
            think: fields
                .think
                .as_deref()
                .map_or(Ok(Think::None), Think::parse)
                .map_err(|reason| format!("think: {reason}"))?,
            repeat,
            condition,
            needs,
            reads_body,
            stream,
            grpc,
        })
    }

    fn condition(&self, text: &str, known: &[String]) -> Result<Condition, String> {
        if let Some(variable) = known.iter().position(|v| v == text) {
            return Ok(Condition::Extracted(variable as u16));
        }
        if let Some((step_name, check_name)) = text.split_once(": ")
            && let Some(step) = self.steps.iter().position(|s| s.name == step_name)
            && let Some(check) = self.steps[step]
                .checks
                .iter()
                .position(|c| c.name == check_name)
        {
            return Ok(Condition::Passed { step, check });
        }
        Err(format!(
            "{text:?} is neither a variable an earlier step extracts ({}) nor an earlier check's full name (\"STEP: CHECK\")",
            if known.is_empty() {
                "none yet".to_owned()
            } else {
                known.join(", ")
            }
        ))
    }

    fn extractions(
        &mut self,
        fields: &BTreeMap<String, ExtractField>,
    ) -> Result<Vec<Extraction>, String> {
        let mut out = Vec::with_capacity(fields.len());
        for (name, field) in fields {
            let (text, optional) = match field {
                ExtractField::Text(text) => (text.as_str(), false),
                ExtractField::Table { from, optional } => (from.as_str(), *optional),
            };
            let fail = |reason: String| format!("extract.{name}: {reason}");
            if !is_variable_name(name) || is_template_word(name) {
                return Err(fail(format!(
                    "{name:?} cannot name a variable (a letter or _, then letters, digits, _ or -; not a template function)"
                )));
            }
            let source = self.source(text).map_err(fail)?;
            let variable = match self.variables.iter().position(|v| v == name) {
                Some(index) => index,
                None if self.variables.len() == MAX_VARIABLES => {
                    return Err(fail(format!(
                        "a flow extracts at most {MAX_VARIABLES} variables"
                    )));
                }
                None => {
                    self.variables.push(name.clone());
                    self.variables.len() - 1
                }
            };
            out.push(Extraction {
                variable: variable as u16,
                text: text.to_owned(),
                optional,
                source,
            });
        }
        Ok(out)
    }

    fn source(&mut self, text: &str) -> Result<Source, String> {
        let text = text.trim();
        let (kind, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        match kind {
            "json" => JsonPath::parse(rest).map(Source::Json),
            "regex" if !rest.is_empty() => {
                let regex = Regex::new(rest).map_err(|e| {
                    format!(
                        "regex {rest:?}: {}",
                        e.to_string().lines().last().unwrap_or_default().trim()
                    )
                })?;
                self.regexes.push(regex);
                Ok(Source::Regex(self.regexes.len() - 1))
            }
            "header" if !rest.is_empty() => Ok(Source::Header(rest.to_owned())),
            "cookie" if !rest.is_empty() => Ok(Source::Cookie(rest.to_owned())),
            _ => Err(format!(
                "{text:?}: want json PATH, regex PATTERN, header NAME or cookie NAME"
            )),
        }
    }

    /// Takes `extractions` (a WebSocket action's) from `message` into the user's
    /// variables; the text of the first that found nothing, naming `step_name`.
    pub fn extract_message(
        &self,
        user: &mut UserState,
        extractions: &[Extraction],
        message: &[u8],
        step_name: &str,
        scratch: &mut FlowScratch,
    ) -> Option<String> {
        let answer = Answer {
            status: 200,
            body: message,
            body_bytes: message.len() as u64,
            ..Answer::default()
        };
        let mut failure = None;
        for extraction in extractions {
            if self.extract(extraction, &answer, user, scratch) == Extracted::Value {
                user.extracted |= 1 << extraction.variable;
                continue;
            }
            user.extracted &= !(1 << extraction.variable);
            if !extraction.optional && failure.is_none() {
                failure = Some(format!(
                    "step {step_name:?}: extract {}: {:?} found nothing",
                    self.variables[usize::from(extraction.variable)],
                    extraction.text
                ));
            }
        }
        failure
    }

    /// The CSV columns the steps' templates read.
    pub fn columns(&self) -> Vec<String> {
        let variables = Some(self.variables.as_slice());
        self.steps
            .iter()
            .flat_map(|step| step.target.template_texts())
            .filter_map(|text| Template::parse_with(text, variables).ok())
            .flat_map(|template| template.columns().map(str::to_owned).collect::<Vec<_>>())
            .collect()
    }

    /// A fresh scratch for one engine thread.
    pub fn scratch(&self) -> FlowScratch {
        FlowScratch {
            locations: self.regexes.iter().map(Regex::capture_locations).collect(),
            text: Vec::new(),
            json: Vec::new(),
        }
    }

    /// A user numbered `number` starting (or starting over) its flow: its first step,
    /// or `None` when no step can run.
    pub fn start(&self, user: &mut UserState, number: u64) -> Option<usize> {
        user.number = number;
        user.extracted = 0;
        user.jar.clear();
        user.variables.resize_with(self.variables.len(), Vec::new);
        user.failed.clear();
        user.failed.resize(self.steps.len(), 0);
        self.enter(user, 0)
    }

    /// Judges the answer to the user's current step: cookies kept, variables
    /// extracted, checks judged. `url` is where the request went; `now_unix_s` dates cookies.
    pub fn judge(
        &self,
        user: &mut UserState,
        answer: &Answer<'_>,
        url: CookieUrl<'_>,
        now_unix_s: i64,
        scratch: &mut FlowScratch,
    ) -> Verdict {
        let step = &self.steps[user.step];
        let Some(call) = step
            .grpc
            .as_ref()
            .filter(|_| step.reads_body && answer.status != 0)
        else {
            return self.judge_read(user, answer, url, now_unix_s, scratch);
        };
        // A gRPC answer is judged as its messages' JSON.
        let mut json = std::mem::take(&mut scratch.json);
        json.clear();
        let encoding = answer.header("grpc-encoding");
        let decoded = call.decode(answer.body, answer.body_cut(), encoding, &mut json);
        let read = Answer {
            body: &json,
            ..*answer
        };
        let mut verdict = self.judge_read(user, &read, url, now_unix_s, scratch);
        scratch.json = json;
        // What could not be read says more than the checks that failed on it.
        if let Err(failure) = decoded {
            verdict.failure = Some(FlowFailure::Decode(failure));
        }
        verdict
    }

    /// [`Flow::judge`] of an answer as its checks read it.
    fn judge_read(
        &self,
        user: &mut UserState,
        answer: &Answer<'_>,
        url: CookieUrl<'_>,
        now_unix_s: i64,
        scratch: &mut FlowScratch,
    ) -> Verdict {
        let step = &self.steps[user.step];
        let mut verdict = Verdict::default();
        if self.options.cookies && answer.status != 0 {
            for set_cookie in answer.headers("set-cookie") {
                if let Err(refusal) = user.jar.store(set_cookie, url, now_unix_s) {
                    verdict.failure.get_or_insert(FlowFailure::Cookie(refusal));
                }
            }
        }
        for (index, extraction) in step.extractions.iter().enumerate() {
            let found = if answer.status == 0 {
                Extracted::Nothing
            } else {
                self.extract(extraction, answer, user, scratch)
            };
            if found == Extracted::Value {
                user.extracted |= 1 << extraction.variable;
                continue;
            }
            user.extracted &= !(1 << extraction.variable);
            if !extraction.optional && answer.status != 0 {
                verdict.failure.get_or_insert(match found {
                    Extracted::NotText => FlowFailure::NotText { extraction: index },
                    _ => FlowFailure::Extract { extraction: index },
                });
            }
        }
        for (index, check) in step.checks.iter().enumerate() {
            if !check.passes(answer, &mut scratch.text) {
                verdict.checks_failed |= 1 << index;
            }
        }
        if self.options.checks_fail_requests && verdict.checks_failed != 0 {
            let check = verdict.checks_failed.trailing_zeros() as usize;
            verdict.failure = Some(FlowFailure::Check { check });
        }
        user.failed[user.step] = verdict.checks_failed;
        verdict
    }

    fn extract(
        &self,
        extraction: &Extraction,
        answer: &Answer<'_>,
        user: &mut UserState,
        scratch: &mut FlowScratch,
    ) -> Extracted {
        let (number, draws) = (user.number, &mut user.draws);
        let out = &mut user.variables[usize::from(extraction.variable)];
        out.clear();
        let found = match &extraction.source {
            Source::Json(path) => {
                let mut pick = |count: u64| {
                    *draws += 1;
                    Rng::for_request(number, *draws, 1).below(count)
                };
                path.find(answer.body, &mut pick)
                    .map(|value| write_value(value, out))
                    .is_some()
            }
            Source::Regex(index) => {
                let locations = &mut scratch.locations[*index];
                let found = self.regexes[*index]
                    .captures_read(locations, answer.body)
                    .and_then(|_| locations.get(1).or_else(|| locations.get(0)));
                if let Some((_, end)) = found
                    && not_utf8_at(answer.body, end)
                {
                    return Extracted::NotText;
                }
                found
                    .map(|(start, end)| out.extend_from_slice(&answer.body[start..end]))
                    .is_some()
            }
            Source::Header(name) => answer
                .header(name)
                .map(|value| out.extend_from_slice(value))
                .is_some(),
            Source::Cookie(name) => user
                .jar
                .value(name)
                .map(|value| out.extend_from_slice(value.as_bytes()))
                .is_some(),
        };
        if found {
            Extracted::Value
        } else {
            Extracted::Nothing
        }
    }

    /// After the current step's answer: the next step and the think before it, or
    /// the end of this run of the flow (also when the next step needs a variable the
    /// user does not have: it cannot be sent).
    pub fn advance(&self, user: &mut UserState, seed: u64) -> Next {
        user.draws += 1;
        let mut rng = Rng::for_request(seed ^ user.number, user.draws, 2);
        let delay_ns = self.steps[user.step].think.draw_ns(&mut rng);
        if user.repeats_left > 0 {
            user.repeats_left -= 1;
            return self.step_unless_missing(user, user.step, delay_ns);
        }
        match self.enter(user, user.step + 1) {
            Some(step) => self.step_unless_missing(user, step, delay_ns),
            None => Next::End { delay_ns },
        }
    }

    fn step_unless_missing(&self, user: &UserState, step: usize, delay_ns: u64) -> Next {
        if self.steps[step].needs & !user.extracted != 0 {
            return Next::End { delay_ns };
        }
        Next::Step { step, delay_ns }
    }

    /// The first step from `from` on whose condition holds, made current.
    fn enter(&self, user: &mut UserState, from: usize) -> Option<usize> {
        let step = (from..self.steps.len()).find(|&i| self.holds(user, self.steps[i].condition))?;
        user.step = step;
        user.repeats_left = self.steps[step].repeat - 1;
        (self.steps[step].needs & !user.extracted == 0).then_some(step)
    }

    fn holds(&self, user: &UserState, condition: Option<Condition>) -> bool {
        match condition {
            None => true,
            Some(Condition::Extracted(variable)) => user.extracted & (1 << variable) != 0,
            Some(Condition::Passed { step, check }) => user.failed[step] & (1 << check) == 0,
        }
    }

    /// The text of a failure's error, naming the step and what failed.
    pub fn failure_text(&self, step: usize, failure: FlowFailure) -> String {
        let step = &self.steps[step];
        match failure {
            FlowFailure::Extract { extraction } => {
                let extraction = &step.extractions[extraction];
                format!(
                    "step {:?}: extract {}: {:?} found nothing",
                    step.name,
                    self.variables[usize::from(extraction.variable)],
                    extraction.text
                )
            }
            FlowFailure::Check { check } => {
                format!(
                    "step {:?}: check {:?} failed",
                    step.name, step.checks[check].name
                )
            }
            FlowFailure::Cookie(refusal) => {
                format!("step {:?}: Set-Cookie refused: {}", step.name, refusal.0)
            }
            FlowFailure::NotText { extraction } => {
                let extraction = &step.extractions[extraction];
                format!(
                    "step {:?}: extract {}: {:?} stops at a byte that is not UTF-8",
                    step.name,
                    self.variables[usize::from(extraction.variable)],
                    extraction.text
                )
            }
            FlowFailure::Decode(failure) => match &step.grpc {
                Some(call) => call.failure_text(&step.name, failure),
                None => format!("step {:?}: the answer is not a gRPC message", step.name),
            },
        }
    }
}

/// Whether `body` at `at` holds a byte that cannot start UTF-8 text (not merely a
/// character cut by the end of what was kept): where a regex reading text stops short.
fn not_utf8_at(body: &[u8], at: usize) -> bool {
    let next = &body[at..body.len().min(at + 4)];
    matches!(std::str::from_utf8(next), Err(e) if e.valid_up_to() == 0 && e.error_len().is_some())
}

impl Think {
    /// `2s`, `uniform(1s, 3s)`, `exp(2s)`.
    pub fn parse(text: &str) -> Result<Think, String> {
        let ns = |t: &str| {
            units::parse_duration(t.trim())
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .map_err(|e| e.to_string())
        };
        let text = text.trim();
        let args = |prefix: &str| {
            text.strip_prefix(prefix)
                .and_then(|t| t.strip_prefix('('))
                .and_then(|t| t.strip_suffix(')'))
        };
        if let Some(inside) = args("uniform") {
            let (low, high) = inside
                .split_once(',')
                .ok_or("uniform takes two durations: uniform(1s, 3s)")?;
            let (low, high) = (ns(low)?, ns(high)?);
            if low > high {
                return Err(format!("uniform({low} ns, {high} ns): the first is larger"));
            }
            return Ok(Think::UniformNs(low, high));
        }
        if let Some(inside) = args("exp") {
            return Ok(Think::ExponentialNs(ns(inside)?));
        }
        if text.contains('(') {
            return Err(format!(
                "{text:?}: want a duration (2s), uniform(1s, 3s) or exp(2s)"
            ));
        }
        Ok(match ns(text)? {
            0 => Think::None,
            ns => Think::ConstantNs(ns),
        })
    }

    fn draw_ns(self, rng: &mut Rng) -> u64 {
        match self {
            Think::None => 0,
            Think::ConstantNs(ns) => ns,
            Think::UniformNs(low, high) => low + rng.below(high - low + 1),
            Think::ExponentialNs(mean) => {
                // Inverse transform; (0, 1] so the logarithm is finite.
                let uniform = (rng.below(1 << 53) + 1) as f64 / (1u64 << 53) as f64;
                (-(mean as f64) * uniform.ln()).min(u64::MAX as f64) as u64
            }
        }
    }
}

impl Step {
    /// Where the step's request goes, as the cookie jar sees it (a templated path
    /// counts up to its first placeholder).
    pub fn cookie_url(&self) -> CookieUrl<'_> {
        let url = CookieUrl::of(&self.target.url);
        match &self.target.templated_path {
            Some(path) => {
                let literal = &path[..path.find("{{").unwrap_or(path.len())];
                let path = &literal[..literal.find('?').unwrap_or(literal.len())];
                CookieUrl { path, ..url }
            }
            None => url,
        }
    }
}

fn step_name(index: usize, fields: &StepFields) -> Result<String, String> {
    match fields.name.as_deref().map(str::trim) {
        None => Ok(format!("step {}", index + 1)),
        Some("") => Err("name: a step's name cannot be empty".to_owned()),
        Some(name) if name.contains(": ") => Err(format!(
            "name: {name:?} cannot hold \": \" (it separates steps from checks in names)"
        )),
        Some(name) => Ok(name.to_owned()),
    }
}

/// A request step with keys only stream steps take: named, so it is not ignored.
fn refuse_stream_keys(fields: &StepFields) -> Result<(), String> {
    let stray = [
        ("actions", !fields.actions.is_empty()),
        ("events", fields.events.is_some()),
        ("listen", fields.listen.is_some()),
        ("ping", fields.ping.is_some()),
        ("reconnect", fields.reconnect.is_some()),
        ("subprotocols", !fields.subprotocols.is_empty()),
        ("compression", fields.compression.is_some()),
        ("send_time", fields.send_time.is_some()),
        ("round_trip", fields.round_trip.is_some()),
    ];
    match stray.iter().find(|(_, given)| *given) {
        Some((key, _)) => Err(format!("{key}: only a ws, sse or stream step takes it")),
        None => Ok(()),
    }
}

fn is_template_word(name: &str) -> bool {
    matches!(name, "seq" | "uuid" | "user" | "pick")
        || name.starts_with("rand.")
        || name.starts_with("csv.")
}

fn parse_checks(fields: &[CheckField]) -> Result<Vec<Check>, String> {
    if fields.len() > MAX_CHECKS {
        return Err(format!("checks: a step has at most {MAX_CHECKS} checks"));
    }
    let mut checks: Vec<Check> = Vec::with_capacity(fields.len());
    for field in fields {
        let check = match field {
            CheckField::Text(text) => Check::parse(text, None),
            CheckField::Named { name, expect } => Check::parse(expect, Some(name)),
        }
        .map_err(|reason| format!("checks: {reason}"))?;
        if checks.iter().any(|c| c.name == check.name) {
            return Err(format!("checks: two checks are named {:?}", check.name));
        }
        checks.push(check);
    }
    Ok(checks)
}

/// Checks one step has at most: one bit each in a record's `checks_failed`, whose top
/// bit is taken.
pub const MAX_CHECKS: usize = 31;

/// A step's `request` text's lines, trimmed, without blank lines and comments.
fn request_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// A gRPC step's answer has metadata and trailers for `header` checks and
/// extractions, but no cookies, so those are refused; a `grpc` check needs a gRPC step.
fn check_reads(grpc: bool, checks: &[Check], extractions: &[Extraction]) -> Result<(), String> {
    if grpc {
        let cookie = |e: &&Extraction| matches!(e.source, Source::Cookie(_));
        if let Some(extraction) = extractions.iter().find(cookie) {
            return Err(format!(
                "extract: {:?}: a gRPC call sets no cookies (extract from its metadata with header NAME, or with json or regex)",
                extraction.text
            ));
        }
    } else if let Some(check) = checks.iter().find(|c| c.reads_grpc_status()) {
        return Err(format!(
            "checks: {:?}: only a GRPC step's answer has a gRPC status",
            check.name
        ));
    }
    Ok(())
}

/// Parses a step's `request` text: `METHOD URL`, header lines, maybe an `@file` line.
fn parse_request(
    text: &str,
    body: Option<&str>,
    headers: &[Header],
    known: &[String],
    origin: &Origin,
    read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<Target, String> {
    let mut lines = request_lines(text);
    let first = lines.next().ok_or("request: empty (want METHOD URL)")?;
    parse_request_lines(first, lines, body, headers, known, origin, read_body)
}

/// [`parse_request`] of its `first` line, then the rest of its `lines`.
fn parse_request_lines<'a>(
    first: &str,
    lines: impl Iterator<Item = &'a str>,
    body: Option<&str>,
    headers: &[Header],
    known: &[String],
    origin: &Origin,
    read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
) -> Result<Target, String> {
    let (method, url) = first
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("request: {first:?}: want METHOD URL"))?;
    check_method(method).map_err(|r| format!("request: {r}"))?;
    let (url, templated_path) =
        check_target_url_with(url.trim(), Some(known)).map_err(|r| format!("request: {r}"))?;
    let mut target = Target {
        method: method.to_owned(),
        url,
        headers: headers.to_vec(),
        body: Vec::new(),
        templated_path,
        grpc_message: None,
        grpc_stream: None,
    };
    for line in lines {
        if let Some(path) = line.strip_prefix('@') {
            let path = origin.path(path.trim());
            target.body = read_body(&path)
                .map_err(|e| format!("request: body file {}: {e}", path.display()))?;
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("request: {line:?}: want a header line Name: value"))?;
        let (name, value) = (name.trim(), value.trim());
        check_header_with(name, value, Some(known)).map_err(|r| format!("request: {r}"))?;
        target.headers.push(Header {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }
    if let Some(body) = body {
        if !target.body.is_empty() {
            return Err("body: the request has an @file body line already".to_owned());
        }
        target.body = body.as_bytes().to_vec();
    }
    check_body_with(&target.body, Some(known)).map_err(|r| format!("body: {r}"))?;
    Ok(target)
}

/// The variables a step's request reads, as bits.
fn needed_variables(target: &Target, known: &[String]) -> Result<u64, String> {
    let mut needs = 0u64;
    for text in target.template_texts() {
        let template = Template::parse_with(text, Some(known))?;
        needs |= template.variables().fold(0, |bits, v| bits | (1 << v));
    }
    Ok(needs)
}

fn step_error(origin: &Origin, index: usize, fields: &StepFields, reason: String) -> WorkloadError {
    let shown = fields.name.as_deref().map_or_else(
        || format!("step {}", index + 1),
        |name| format!("step {name:?}"),
    );
    let label = origin.label("step");
    // A step on its own line: `flow.toml:14: step "list": request: ...`.
    let label = match (fields.line, &origin.place) {
        (Some(line), Some(place)) => {
            let file = place.split(':').next().unwrap_or_default();
            let scenario = place.split_once(": ").map_or("", |(_, rest)| rest);
            format!("{file}:{line}: {scenario}{shown}")
        }
        _ => format!("{label} {shown}"),
    };
    WorkloadError::Field { label, reason }
}

#[cfg(test)]
mod tests;
