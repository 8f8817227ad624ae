//! The Rust peer of Braid's `web` benchmark: the six TechEmpower Framework
//! Benchmarks tests on axum + tokio-postgres, pooled by deadpool-postgres.
//!
//! Usage: web-rust PORT DATABASE_URL [POOL_SIZE]
//! (or the environment: PORT, DATABASE_URL, DB_POOL_SIZE; argv wins).

use std::env;

use axum::{
    extract::{Query, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Json, Router,
};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde::{Deserialize, Serialize};
use tokio_postgres::NoTls;

const SELECT_WORLD: &str = "SELECT id, randomnumber FROM world WHERE id = $1";
const UPDATE_WORLD: &str = "UPDATE world SET randomnumber = $2 WHERE id = $1";
const SELECT_FORTUNES: &str = "SELECT id, message FROM fortune";

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

#[derive(Serialize)]
struct World {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

#[derive(Deserialize)]
struct Params {
    queries: Option<String>,
}

/// TFB's rule: a missing or non-integer value is 1; clamped to 1..500.
fn query_count(p: &Params) -> usize {
    match p.queries.as_deref().and_then(|s| s.parse::<i64>().ok()) {
        None => 1,
        Some(n) => n.clamp(1, 500) as usize,
    }
}

fn random_id() -> i32 {
    fastrand::i32(1..=10000)
}

struct Error(String);

impl<E: std::fmt::Display> From<E> for Error {
    fn from(e: E) -> Self {
        Error(e.to_string())
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        (StatusCode::INTERNAL_SERVER_ERROR, self.0).into_response()
    }
}

async fn plaintext() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain")], "Hello, World!")
}

async fn json() -> impl IntoResponse {
    Json(Message {
        message: "Hello, World!",
    })
}

async fn fetch_world(
    client: &deadpool_postgres::Client,
    stmt: &tokio_postgres::Statement,
) -> Result<World, Error> {
    let row = client.query_one(stmt, &[&random_id()]).await?;
    Ok(World {
        id: row.get(0),
        random_number: row.get(1),
    })
}

async fn db(State(pool): State<Pool>) -> Result<Json<World>, Error> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(SELECT_WORLD).await?;
    Ok(Json(fetch_world(&client, &stmt).await?))
}

async fn queries(
    State(pool): State<Pool>,
    Query(p): Query<Params>,
) -> Result<Json<Vec<World>>, Error> {
    let n = query_count(&p);
    let client = pool.get().await?;
    let stmt = client.prepare_cached(SELECT_WORLD).await?;
    let mut worlds = Vec::with_capacity(n);
    for _ in 0..n {
        worlds.push(fetch_world(&client, &stmt).await?);
    }
    Ok(Json(worlds))
}

async fn updates(
    State(pool): State<Pool>,
    Query(p): Query<Params>,
) -> Result<Json<Vec<World>>, Error> {
    let n = query_count(&p);
    let client = pool.get().await?;
    let select = client.prepare_cached(SELECT_WORLD).await?;
    let update = client.prepare_cached(UPDATE_WORLD).await?;
    let mut worlds = Vec::with_capacity(n);
    for _ in 0..n {
        let mut w = fetch_world(&client, &select).await?;
        w.random_number = random_id();
        worlds.push(w);
    }
    for w in &worlds {
        client.execute(&update, &[&w.id, &w.random_number]).await?;
    }
    Ok(Json(worlds))
}

fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

async fn fortunes(State(pool): State<Pool>) -> Result<Response, Error> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(SELECT_FORTUNES).await?;
    let rows = client.query(&stmt, &[]).await?;
    let mut list: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    list.push((0, "Additional fortune added at request time.".to_string()));
    list.sort_by(|a, b| a.1.cmp(&b.1));
    let mut body = String::with_capacity(2048);
    body.push_str(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
         <tr><th>id</th><th>message</th></tr>",
    );
    for (id, message) in &list {
        body.push_str("<tr><td>");
        body.push_str(&id.to_string());
        body.push_str("</td><td>");
        escape(&mut body, message);
        body.push_str("</td></tr>");
    }
    body.push_str("</table></body></html>");
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

fn arg_or_env(i: usize, var: &str) -> Option<String> {
    env::args().nth(i).or_else(|| env::var(var).ok())
}

#[tokio::main]
async fn main() {
    let port: u16 = arg_or_env(1, "PORT")
        .expect("PORT")
        .parse()
        .expect("PORT is a number");
    let url = arg_or_env(2, "DATABASE_URL").expect("DATABASE_URL");
    let pool_size: usize = arg_or_env(3, "DB_POOL_SIZE")
        .map(|s| s.parse().expect("DB_POOL_SIZE is a number"))
        .unwrap_or(8);
    let pg: tokio_postgres::Config = url.parse().expect("DATABASE_URL");
    let mgr = Manager::from_config(
        pg,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(mgr).max_size(pool_size).build().unwrap();
    let app = Router::new()
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/db", get(db))
        .route("/queries", get(queries))
        .route("/updates", get(updates))
        .route("/fortunes", get(fortunes))
        .with_state(pool)
        // hyper writes Date itself; TFB also wants Server.
        .layer(axum::middleware::map_response(|mut res: Response| async {
            res.headers_mut()
                .insert(header::SERVER, HeaderValue::from_static("axum"));
            res
        }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    axum::serve(listener, app).await.unwrap();
}
