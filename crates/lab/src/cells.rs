//! A plan's cells: each variant at each step (sweep), or each combination of the
//! matrix axes, `repeat` times, in the order written or shuffled with a seed. Search
//! cells are made one probe at a time by the runner. Also the `{{name}}` substitution
//! of hook commands.

use crate::plan::{Mode, Plan, Steps};

/// What one step offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Offer {
    /// Open model, requests per second.
    Rate(f64),
    /// Closed model, users.
    Users(u64),
    /// An open-model schedule, run whole.
    Schedule(String),
}

impl Offer {
    /// How the offer reads in folder names and tables: `500`, `users-10`, `schedule`.
    pub fn label(&self) -> String {
        match self {
            Offer::Rate(rate) => format_rate(*rate),
            Offer::Users(users) => format!("users-{users}"),
            Offer::Schedule(_) => "schedule".to_owned(),
        }
    }

    /// The asked rate, if the offer is one.
    pub fn rate(&self) -> Option<f64> {
        match self {
            Offer::Rate(rate) => Some(*rate),
            _ => None,
        }
    }

    /// The users, if the offer is a count of them.
    pub fn users(&self) -> Option<u64> {
        match self {
            Offer::Users(users) => Some(*users),
            _ => None,
        }
    }
}

/// A rate without needless decimals: `500`, `512.5`.
pub fn format_rate(rate: f64) -> String {
    if rate.fract() == 0.0 && rate.abs() < 1e15 {
        format!("{}", rate as i64)
    } else {
        format!("{rate:.1}")
    }
}

/// One cell of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Index into the plan's variants.
    pub variant: usize,
    /// What the step offers.
    pub offer: Offer,
    /// Named axis values (matrix), in axis order; `rate` is not among them.
    pub params: Vec<(String, String)>,
    /// 1-based run of a repeated matrix cell.
    pub repeat: u32,
}

impl Cell {
    /// The values hooks may name: `variant`, `rate` (or `users`), `repeat` and each axis.
    pub fn values(&self, plan: &Plan) -> Vec<(String, String)> {
        let mut values = vec![(
            "variant".to_owned(),
            plan.variants[self.variant].name.clone(),
        )];
        match &self.offer {
            Offer::Rate(rate) => values.push(("rate".to_owned(), format_rate(*rate))),
            Offer::Users(users) => values.push(("users".to_owned(), users.to_string())),
            Offer::Schedule(schedule) => values.push(("schedule".to_owned(), schedule.clone())),
        }
        values.push(("repeat".to_owned(), self.repeat.to_string()));
        values.extend(self.params.iter().cloned());
        values.extend(plan.hook_values.iter().cloned());
        values
    }

    /// The cell's folder under `steps/`: `003-go-500`, `007-api-500-replicas-2-r2`.
    pub fn folder(&self, plan: &Plan, index: usize) -> String {
        let mut name = format!(
            "{index:03}-{}-{}",
            plan.variants[self.variant].name,
            self.offer.label()
        );
        for (axis, value) in &self.params {
            name.push_str(&format!("-{axis}-{}", safe(value)));
        }
        if plan.matrix.repeat > 1 {
            name.push_str(&format!("-r{}", self.repeat));
        }
        name
    }
}

/// A value fit for a folder name.
fn safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Replaces each `{{name}}` of `values` in `text`; other placeholders are left alone.
pub fn substitute(text: &str, values: &[(String, String)]) -> String {
    values.iter().fold(text.to_owned(), |text, (name, value)| {
        text.replace(&format!("{{{{{name}}}}}",), value)
    })
}

/// The cells of a sweep or matrix plan, in run order (empty for search).
pub fn cells(plan: &Plan) -> Vec<Cell> {
    let offers = |steps: &Steps| -> Vec<Offer> {
        match steps {
            Steps::Rates(rates) => rates.iter().map(|r| Offer::Rate(*r)).collect(),
            Steps::Users(users) => users.iter().map(|u| Offer::Users(*u)).collect(),
            Steps::Schedule(s) => vec![Offer::Schedule(s.clone())],
        }
    };
    match plan.mode {
        Mode::Search => Vec::new(),
        Mode::Sweep => (0..plan.variants.len())
            .flat_map(|variant| {
                offers(&plan.load.steps).into_iter().map(move |offer| Cell {
                    variant,
                    offer,
                    params: Vec::new(),
                    repeat: 1,
                })
            })
            .collect(),
        Mode::Matrix => matrix_cells(plan, offers(&plan.load.steps)),
    }
}

fn matrix_cells(plan: &Plan, load_offers: Vec<Offer>) -> Vec<Cell> {
    let matrix = &plan.matrix;
    let offers: Vec<Offer> = match matrix.axes.iter().find(|(name, _)| name == "rate") {
        Some((_, values)) => values
            .iter()
            .filter_map(|v| v.parse().ok())
            .map(Offer::Rate)
            .collect(),
        None => load_offers,
    };
    let named: Vec<&(String, Vec<String>)> = matrix
        .axes
        .iter()
        .filter(|(name, _)| name != "rate")
        .collect();
    // Every combination of the named axes, the last axis varying fastest.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (axis, values) in &named {
        combos = combos
            .into_iter()
            .flat_map(|combo| {
                values.iter().map(move |value| {
                    let mut next = combo.clone();
                    next.push((axis.clone(), value.clone()));
                    next
                })
            })
            .collect();
    }
    let mut cells = Vec::new();
    for variant in 0..plan.variants.len() {
        for params in &combos {
            for offer in &offers {
                for repeat in 1..=matrix.repeat {
                    cells.push(Cell {
                        variant,
                        offer: offer.clone(),
                        params: params.clone(),
                        repeat,
                    });
                }
            }
        }
    }
    if let Some(seed) = matrix.shuffle_seed {
        shuffle(&mut cells, seed);
    }
    cells
}

/// Fisher-Yates with splitmix64: the same seed gives the same order on every machine.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        Plan::parse(text, "p.toml", Path::new(".")).expect("valid plan")
    }

    const VARIANTS: &str = "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n";

    #[test]
    fn cells_of_each_mode() {
        let rows: [(&str, &str, Vec<&str>); 4] = [
            (
                "sweep",
                "mode = \"sweep\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\nrates = [10, 20]\n",
                vec!["000-a-10", "001-a-20", "002-b-10", "003-b-20"],
            ),
            (
                "closed sweep",
                "mode = \"sweep\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\nusers = [5]\n",
                vec!["000-a-users-5", "001-b-users-5"],
            ),
            (
                "search",
                "mode = \"search\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\n",
                vec![],
            ),
            (
                "matrix",
                "mode = \"matrix\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\n[matrix]\naxes = { rate = [100, 500], replicas = [1, 2] }\nrepeat = 2\n",
                vec![
                    "000-a-100-replicas-1-r1",
                    "001-a-100-replicas-1-r2",
                    "002-a-500-replicas-1-r1",
                    "003-a-500-replicas-1-r2",
                    "004-a-100-replicas-2-r1",
                    "005-a-100-replicas-2-r2",
                    "006-a-500-replicas-2-r1",
                    "007-a-500-replicas-2-r2",
                ],
            ),
        ];
        for (name, text, want) in rows {
            let plan = plan(&format!("{text}{VARIANTS}"));
            let got: Vec<String> = cells(&plan)
                .iter()
                .enumerate()
                .map(|(i, c)| c.folder(&plan, i))
                .collect();
            assert_eq!(got[..want.len()], want[..], "{name}");
        }
    }

    #[test]
    fn shuffled_matrices_repeat_their_order_and_keep_every_cell() {
        let text = format!(
            "mode = \"matrix\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\n[matrix]\naxes = {{ rate = [1, 2, 3, 4] }}\norder = \"shuffled\"\nseed = 7\n{VARIANTS}"
        );
        let plan = plan(&text);
        let (a, b) = (cells(&plan), cells(&plan));
        assert_eq!(a, b);
        let mut unshuffled = plan;
        unshuffled.matrix.shuffle_seed = None;
        let plain = cells(&unshuffled);
        assert_ne!(a, plain);
        assert_eq!(a.len(), plain.len());
        assert!(plain.iter().all(|cell| a.contains(cell)));
    }

    #[test]
    fn substitution_leaves_other_placeholders_alone() {
        let values = vec![
            ("variant".to_owned(), "go".to_owned()),
            ("replicas".to_owned(), "3".to_owned()),
        ];
        for (text, want) in [
            (
                "kubectl scale deploy/{{variant}} --replicas={{replicas}}",
                "kubectl scale deploy/go --replicas=3",
            ),
            (
                "echo {{rand.lower 5}} {{unknown}}",
                "echo {{rand.lower 5}} {{unknown}}",
            ),
            ("", ""),
        ] {
            assert_eq!(substitute(text, &values), want, "{text}");
        }
    }
}
