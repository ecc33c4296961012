//! Spike: PostgreSQL from a wasm32-wasip2 component through postgres-protocol + std::net::TcpStream.
//! usage: pgspike addr=127.0.0.1:5432 user=U password=P dbname=D [sslmode=disable|require|verify-full]
//!        [ca=/ca/root.crt] [host=name-for-verify-full] [n=ITERATIONS] [steps=all|connect|bench]
mod pg;
#[cfg(feature = "tls")]
mod tls;

use pg::{Conn, ConnectOptions, Result, SslMode};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn main() {
    if let Err(e) = run() {
        eprintln!("pgspike: error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: HashMap<String, String> = std::env::args()
        .skip(1)
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let get = |k: &str, d: &str| args.get(k).cloned().unwrap_or_else(|| d.to_owned());
    let addr = get("addr", "127.0.0.1:5432");
    let sslmode = match get("sslmode", "disable").as_str() {
        "disable" => SslMode::Disable,
        "require" => SslMode::Require,
        "verify-full" => SslMode::VerifyFull,
        m => return Err(format!("unknown sslmode {m}").into()),
    };
    let ca_pem = match args.get("ca") {
        Some(p) => Some(std::fs::read(p).map_err(|e| format!("reading {p}: {e}"))?),
        None => None,
    };
    let host = get("host", addr.rsplit_once(':').map(|(h, _)| h).unwrap_or("localhost"));
    let (user, password, dbname) = (get("user", "agmsg"), get("password", ""), get("dbname", "postgres"));
    let o = ConnectOptions {
        addr: &addr,
        user: &user,
        password: &password,
        dbname: &dbname,
        sslmode,
        ca_pem,
        server_name: &host,
    };
    let n: usize = get("n", "200").parse()?;
    let steps = get("steps", "all");

    let t = Instant::now();
    let mut a = Conn::connect(&o)?;
    println!(
        "connect: {:?} {:?} server {} auth {} tls {:?} pid {}",
        t.elapsed(),
        a.phases,
        a.server_version,
        a.auth,
        a.tls,
        a.backend_pid
    );
    if steps == "connect" {
        return a.close();
    }

    // Simple query protocol: schema.
    a.simple(
        "DROP TABLE IF EXISTS spike_events; DROP TABLE IF EXISTS spike_seq;
         CREATE TABLE spike_seq (id int PRIMARY KEY CHECK (id = 1), last bigint NOT NULL);
         INSERT INTO spike_seq VALUES (1, 0);
         CREATE TABLE spike_events (seq bigint PRIMARY KEY, team text NOT NULL, body text, note text,
                                    at timestamptz NOT NULL DEFAULT now());",
    )?;
    let v = a.simple("SELECT version(), current_setting('ssl') ")?;
    println!("simple: {:?}", v[0].rows[0]);

    // Extended protocol inside an explicit transaction, with awkward text and a NULL.
    const APPEND: &str = "WITH s AS (UPDATE spike_seq SET last = last + 1 WHERE id = 1 RETURNING last)
         INSERT INTO spike_events (seq, team, body, note) SELECT last, $1, $2, $3 FROM s RETURNING seq";
    let body = "it's \"quoted\"; DROP TABLE x; -- \u{1F600} line1\nline2\t\\";
    a.simple("BEGIN")?;
    let r = a.query(APPEND, &[Some("team-a"), Some(body), None])?;
    println!("txn insert: tag {} seq {:?} status {}", r.tag, r.rows[0][0], a.txn_status as char);
    a.simple("COMMIT")?;
    let r = a.query("SELECT seq, body, note IS NULL FROM spike_events WHERE seq > $1 ORDER BY seq", &[Some("0")])?;
    assert_eq!(r.rows[0][1].as_deref(), Some(body), "body round trip");
    println!("select: {} row(s), body round-trips exactly, note null = {:?}", r.rows.len(), r.rows[0][2]);

    // Rollback keeps the counter unchanged.
    a.simple("BEGIN")?;
    a.query(APPEND, &[Some("team-a"), Some("rolled back"), None])?;
    a.simple("ROLLBACK")?;
    let r = a.query("SELECT last FROM spike_seq", &[])?;
    println!("after rollback: counter {:?}", r.rows[0][0]);

    // A statement error inside the extended protocol: reported, connection still usable.
    match a.query("SELECT 1/$1::int", &[Some("0")]) {
        Err(e) => println!("error path: {e}"),
        Ok(_) => return Err("division by zero succeeded?".into()),
    }

    if steps != "bench" {
        ordering_and_notify(&o, &mut a)?;
    }
    bench(&mut a, n)?;
    a.close()
}

/// Two connections from one single-threaded guest: writer B blocks on the counter row held by A's
/// open transaction, and gets the next number only after A commits; LISTEN/NOTIFY with timeouts.
fn ordering_and_notify(o: &ConnectOptions<'_>, a: &mut Conn) -> Result<()> {
    const APPEND: &str = "WITH s AS (UPDATE spike_seq SET last = last + 1 WHERE id = 1 RETURNING last)
         INSERT INTO spike_events (seq, team, body) SELECT last, $1, $2 FROM s RETURNING seq";
    let mut b = Conn::connect(o)?;
    a.simple("BEGIN")?;
    let sa = a.query(APPEND, &[Some("a"), Some("from A")])?.rows[0][0].clone();
    b.send_query(APPEND, &[Some("b"), Some("from B")])?; // autocommit statement; must wait for A
    let blocked = !b.wait_readable(Duration::from_millis(300))?;
    println!("ordering: A holds seq {sa:?} uncommitted; B blocked on the counter row: {blocked}");
    a.simple("COMMIT")?;
    let sb = b.finish_query()?.rows[0][0].clone();
    println!("ordering: after A's COMMIT, B got seq {sb:?} (commit order == seq order)");

    // LISTEN/NOTIFY: A listens; an idle wait times out; B notifies inside a transaction.
    a.simple("LISTEN agmsg_events")?;
    let t = Instant::now();
    let none = a.next_notification(Duration::from_millis(250))?;
    println!("notify: idle wait returned {:?} after {:?}", none.map(|n| n.payload), t.elapsed());
    b.simple("BEGIN")?;
    b.query(APPEND, &[Some("b"), Some("notify me")])?;
    b.query("SELECT pg_notify('agmsg_events', $1)", &[Some("team b")])?;
    let early = a.next_notification(Duration::from_millis(100))?;
    println!("notify: before B's COMMIT A saw {:?}", early.map(|n| n.payload));
    let t = Instant::now();
    b.simple("COMMIT")?;
    let got = a.next_notification(Duration::from_secs(5))?.ok_or("no notification")?;
    println!(
        "notify: after COMMIT got channel {} payload {:?} from pid {} in {:?}",
        got.channel,
        got.payload,
        got.process_id,
        t.elapsed()
    );
    a.simple("UNLISTEN *")?;
    b.close()
}

fn bench(a: &mut Conn, n: usize) -> Result<()> {
    fn per(t: Instant, n: usize) -> String {
        format!("{:.1} us/op", t.elapsed().as_secs_f64() * 1e6 / n as f64)
    }
    a.prepare("one", "SELECT $1::int8 + 1")?;
    a.execute("one", &[Some("1")])?;
    let t = Instant::now();
    for i in 0..n {
        let r = a.execute("one", &[Some(&i.to_string())])?;
        debug_assert_eq!(r.rows.len(), 1);
    }
    println!("bench: prepared SELECT $1+1 x{n}: {}", per(t, n));
    let t = Instant::now();
    for _ in 0..n {
        a.simple("SELECT 1")?;
    }
    println!("bench: simple SELECT 1 x{n}: {}", per(t, n));
    const APPEND: &str = "WITH s AS (UPDATE spike_seq SET last = last + 1 WHERE id = 1 RETURNING last)
         INSERT INTO spike_events (seq, team, body) SELECT last, $1, $2 FROM s RETURNING seq";
    a.prepare("append", APPEND)?;
    let t = Instant::now();
    for _ in 0..n {
        a.execute("append", &[Some("bench"), Some("hello world")])?;
    }
    println!("bench: append (counter+insert, autocommit) x{n}: {}", per(t, n));
    let t = Instant::now();
    for _ in 0..n {
        a.simple("BEGIN")?;
        a.execute("append", &[Some("bench"), Some("hello world")])?;
        a.simple("COMMIT")?;
    }
    println!("bench: BEGIN/append/COMMIT x{n}: {}", per(t, n));
    let t = Instant::now();
    for _ in 0..n {
        a.query("SELECT seq, team, body FROM spike_events WHERE seq > $1 ORDER BY seq LIMIT 50", &[Some("10")])?;
    }
    println!("bench: unnamed parse+bind SELECT 50 rows x{n}: {}", per(t, n));
    Ok(())
}
