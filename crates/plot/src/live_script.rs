//! What makes a run page live (`loadlab attack -dashboard`): its state ([`LiveState`],
//! embedded as JSON and served as `/data`), the script that polls it (`live.js`) and
//! the content policy that lets the script fetch from where the page came. The page
//! itself (`html.rs`) adds them; `live_page.rs` serves it.

/// The plot page's policy, plus fetching its updates from where it came.
pub(crate) const CONTENT_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; \
connect-src 'self'";
/// The live page's own script: polls `/data`, swaps in the newer page.
const LIVE_SCRIPT: &str = include_str!("live.js");

/// What the live page says about itself (embedded as JSON, and served as `/data`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveState {
    pub version: u64,
    pub finished: bool,
    /// Lines about the run shown under the page's header (a steered run's shards).
    pub notes: Vec<String>,
}

impl LiveState {
    fn json(&self) -> String {
        format!(
            "{{\"version\":{},\"finished\":{}}}",
            self.version, self.finished
        )
    }
}

/// Appends the live state and script before `</body>`.
pub(crate) fn add_script(out: &mut String, state: &LiveState) {
    const END: &str = "</body>\n</html>\n";
    if out.ends_with(END) {
        out.truncate(out.len() - END.len());
    }
    out.push_str("<script type=\"application/json\" id=\"live-state\">");
    out.push_str(&state.json());
    out.push_str("</script>\n<script>\n");
    out.push_str(LIVE_SCRIPT);
    out.push_str("</script>\n");
    out.push_str(END);
}
