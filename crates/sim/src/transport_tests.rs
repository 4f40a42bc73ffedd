use std::thread::sleep;
use std::time::Duration;

use fedcluster_core::model::{Batch, Targets};
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, ClientId, Message, RoundCtx};
use fedcluster_models::LinearRegression;

use super::{InProcess, Transport};

/// The server's message: nothing.
struct Go;

/// A client's reply: the pool thread that ran it.
struct RanOn(Option<usize>);

impl Message for Go {
    fn wire_bytes(&self) -> u64 {
        0
    }
    fn is_finite(&self) -> bool {
        true
    }
}

impl Message for RanOn {
    fn wire_bytes(&self) -> u64 {
        0
    }
    fn is_finite(&self) -> bool {
        true
    }
}

/// A client that works for `millis` and says where it ran.
#[derive(Clone)]
struct Busy {
    millis: u64,
}

impl ClientHalf for Busy {
    type Down = Go;
    type Up = RanOn;

    fn handle(&mut self, _: &RoundCtx, _: &Go, _: &mut ClientEnv<'_>) -> Result<RanOn, AlgoError> {
        sleep(Duration::from_millis(self.millis));
        Ok(RanOn(rayon::current_thread_index()))
    }
}

/// The pool thread each of `clients` ran on, exchanged on two threads as
/// one plan, and the order their replies came in.
fn threads_of(clients: Vec<Busy>) -> (Vec<usize>, Vec<ClientId>) {
    let x = [0.0f32];
    let y = [0.0f32];
    let batch = Batch::new(&x, Targets::Real(&y), 1).unwrap();
    let data = vec![batch; clients.len()];
    let model = LinearRegression::new(1).unwrap();
    let n = clients.len();
    let mut transport = InProcess::new(clients, &data, &model, 1, 2).unwrap();
    let ctx = RoundCtx {
        round: 0,
        rounds: 1,
        num_clients: n,
    };
    let plan: Vec<(ClientId, Go)> = (0..n).map(|id| (id, Go)).collect();
    let mut ran_on = vec![usize::MAX; n];
    let mut order = Vec::new();
    transport
        .exchange(&ctx, &plan, &mut |id, RanOn(thread)| {
            ran_on[id] = thread.expect("ran on a pool thread");
            order.push(id);
            Ok(())
        })
        .unwrap();
    (ran_on, order)
}

#[test]
fn a_thread_done_early_takes_the_clients_left_while_the_other_works_on_a_large_one() {
    // Client 0 takes as long as the seven others together, 20 times over: the
    // thread that runs it should run nothing else, however the chunk was cut.
    let mut clients = vec![Busy { millis: 10 }; 8];
    clients[0].millis = 1_400;
    let (ran_on, order) = threads_of(clients);
    let large = ran_on[0];
    let others: Vec<usize> = ran_on[1..].to_vec();
    assert!(
        others.iter().all(|&t| t != large),
        "client 0 ran on thread {large}, and so did others: {ran_on:?}"
    );
    assert_eq!(order, (0..8).collect::<Vec<_>>(), "replies in plan order");
}
