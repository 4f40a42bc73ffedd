use std::sync::Mutex;
use std::thread::sleep;
use std::time::Duration;

use super::run_largest_first;

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn every_job_runs_once_and_the_results_come_back_in_the_jobs_order() {
    for threads in [1, 2, 3] {
        let costs = vec![3, 9, 1, 9, 0, 4, 7, 2, 8, 5, 6];
        let ran = Mutex::new(Vec::new());
        let results = run_largest_first(
            &pool(threads),
            costs.clone(),
            |&c| c,
            |_, c| {
                ran.lock().unwrap().push(c);
                c * 10
            },
        );
        assert_eq!(results, costs.iter().map(|c| c * 10).collect::<Vec<_>>());
        let mut ran = ran.into_inner().unwrap();
        ran.sort_unstable();
        let mut expected = costs.clone();
        expected.sort_unstable();
        assert_eq!(ran, expected, "{threads} threads");
    }
}

#[test]
fn one_thread_takes_the_jobs_by_decreasing_cost_ties_in_their_order() {
    let jobs = vec![(0, 2), (1, 5), (2, 2), (3, 7), (4, 5)];
    let ran = Mutex::new(Vec::new());
    run_largest_first(
        &pool(1),
        jobs,
        |&(_, c)| c,
        |_, (id, _)| ran.lock().unwrap().push(id),
    );
    assert_eq!(ran.into_inner().unwrap(), vec![3, 1, 4, 0, 2]);
}

#[test]
fn the_largest_job_starts_at_once_and_the_other_thread_takes_the_rest() {
    // The last job costs twice the seven others together: taken in order, a
    // thread would reach it only after its share of them, and both threads
    // would run small jobs; largest first, its thread runs nothing else.
    let mut costs = vec![1; 8];
    costs[7] = 140;
    let threads = run_largest_first(
        &pool(2),
        costs,
        |&c| c,
        |thread, c| {
            sleep(Duration::from_millis(10 * c as u64));
            thread
        },
    );
    let large = threads[7];
    assert!(
        threads[..7].iter().all(|&t| t != large),
        "the large job ran on thread {large}, and so did others: {threads:?}"
    );
}
