//! [`Worker`]: everything one server thread owns, shared with its connection tasks
//! through `Rc`; and [`arm_reset`], how a connection ends with a reset.

use std::cell::RefCell;
use std::sync::Arc;

use rand::rngs::SmallRng;
use socket2::SockRef;

use crate::metrics::ThreadStats;
use crate::state::{LocalView, Shared};

/// Everything one server thread owns. Shared with its connection tasks through `Rc`.
pub(crate) struct Worker {
    pub shared: Arc<Shared>,
    pub stats: Arc<ThreadStats>,
    pub view: LocalView,
    pub rng: RefCell<SmallRng>,
    /// Buffers templated answers render into, handed back when the answer is written
    /// (see `Rendered` in `reply.rs`), so rendering allocates only while warming up.
    pub render_buffers: RefCell<Vec<Vec<u8>>>,
}

/// Makes the next close of `stream` send a TCP reset instead of a FIN.
pub(crate) fn arm_reset(stream: &tokio::net::TcpStream) {
    let _ = SockRef::from(stream).set_linger(Some(std::time::Duration::ZERO));
}
