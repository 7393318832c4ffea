mod sched_skel {
    include!(concat!(env!("OUT_DIR"), "/sched.skel.rs"));
}
