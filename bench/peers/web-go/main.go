// The Go peer of Braid's `web` benchmark: the six TechEmpower Framework
// Benchmarks tests on net/http and pgx (pgxpool), html/template for the
// fortunes page.
//
// Usage: web-go PORT DATABASE_URL [POOL_SIZE]
// (or the environment: PORT, DATABASE_URL, DB_POOL_SIZE; argv wins).
package main

import (
	"context"
	"encoding/json"
	"html/template"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	selectWorld    = "SELECT id, randomnumber FROM world WHERE id = $1"
	updateWorld    = "UPDATE world SET randomnumber = $2 WHERE id = $1"
	selectFortunes = "SELECT id, message FROM fortune"
)

type World struct {
	ID           int32 `json:"id"`
	RandomNumber int32 `json:"randomNumber"`
}

type Fortune struct {
	ID      int32
	Message string
}

var fortunesTemplate = template.Must(template.New("fortunes").Parse(
	`<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>` +
		`<tr><th>id</th><th>message</th></tr>` +
		`{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}` +
		`</table></body></html>`))

var pool *pgxpool.Pool

func randomID() int32 { return rand.Int32N(10000) + 1 }

// TFB's rule: a missing or non-integer value is 1; clamped to 1..500.
func queryCount(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("queries"))
	switch {
	case err != nil || n < 1:
		return 1
	case n > 500:
		return 500
	}
	return n
}

func headers(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Server", "go")
	h.Set("Content-Type", contentType)
}

func fail(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		fail(w, err)
		return
	}
	headers(w, "application/json")
	w.Write(body)
}

func plaintext(w http.ResponseWriter, r *http.Request) {
	headers(w, "text/plain")
	w.Write([]byte("Hello, World!"))
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, struct {
		Message string `json:"message"`
	}{"Hello, World!"})
}

func fetchWorld(ctx context.Context, w *World) error {
	return pool.QueryRow(ctx, selectWorld, randomID()).Scan(&w.ID, &w.RandomNumber)
}

func db(w http.ResponseWriter, r *http.Request) {
	var world World
	if err := fetchWorld(r.Context(), &world); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, &world)
}

func queries(w http.ResponseWriter, r *http.Request) {
	worlds := make([]World, queryCount(r))
	for i := range worlds {
		if err := fetchWorld(r.Context(), &worlds[i]); err != nil {
			fail(w, err)
			return
		}
	}
	writeJSON(w, worlds)
}

func updates(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	worlds := make([]World, queryCount(r))
	for i := range worlds {
		if err := fetchWorld(ctx, &worlds[i]); err != nil {
			fail(w, err)
			return
		}
		worlds[i].RandomNumber = randomID()
	}
	for _, world := range worlds {
		if _, err := pool.Exec(ctx, updateWorld, world.ID, world.RandomNumber); err != nil {
			fail(w, err)
			return
		}
	}
	writeJSON(w, worlds)
}

func fortunes(w http.ResponseWriter, r *http.Request) {
	rows, err := pool.Query(r.Context(), selectFortunes)
	if err != nil {
		fail(w, err)
		return
	}
	list := make([]Fortune, 0, 16)
	for rows.Next() {
		var f Fortune
		if err := rows.Scan(&f.ID, &f.Message); err != nil {
			rows.Close()
			fail(w, err)
			return
		}
		list = append(list, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		fail(w, err)
		return
	}
	list = append(list, Fortune{0, "Additional fortune added at request time."})
	sort.Slice(list, func(i, j int) bool { return list[i].Message < list[j].Message })
	headers(w, "text/html; charset=utf-8")
	if err := fortunesTemplate.Execute(w, list); err != nil {
		log.Print(err)
	}
}

func argOrEnv(i int, name string) string {
	if len(os.Args) > i {
		return os.Args[i]
	}
	return os.Getenv(name)
}

func main() {
	port := argOrEnv(1, "PORT")
	url := argOrEnv(2, "DATABASE_URL")
	if port == "" || url == "" {
		log.Fatal("usage: web-go PORT DATABASE_URL [POOL_SIZE]")
	}
	poolSize := 8
	if s := argOrEnv(3, "DB_POOL_SIZE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatal("DB_POOL_SIZE: ", err)
		}
		poolSize = n
	}
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Fatal(err)
	}
	config.MaxConns = int32(poolSize)
	config.MinConns = int32(poolSize)
	pool, err = pgxpool.NewWithConfig(context.Background(), config)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plaintext", plaintext)
	mux.HandleFunc("GET /json", jsonHandler)
	mux.HandleFunc("GET /db", db)
	mux.HandleFunc("GET /queries", queries)
	mux.HandleFunc("GET /updates", updates)
	mux.HandleFunc("GET /fortunes", fortunes)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, mux))
}
