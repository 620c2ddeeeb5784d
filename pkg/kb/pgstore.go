package kb

// Knowledge bases in PostgreSQL (Config.Store "postgres"), for several
// replicas serving the same knowledge bases. What lives where:
//
//   - the list of knowledge bases: the table mixchat_kb_registry in the
//     DSN's schema (name → schema); the knowledge bases' schemas are
//     mixchat_kb_HASH (SCHEMA_kb_HASH when the DSN's search_path selects a
//     schema other than public);
//   - each knowledge base's documents, chunks (text, metadata, BM25 term
//     frequencies, vectors) and settings: a schema of its own, with the
//     tables of the SQLite file (pgdb.go), written in the same transactions
//     as with SQLite, each under the knowledge base's advisory lock;
//   - the vectors: with vector_store "embedded", in an HNSW graph in
//     every replica's memory, like BM25 below; with "qdrant", only in the
//     knowledge base's Qdrant collection, which every replica searches
//     directly. The replica that writes upserts the new chunks' points
//     before its commit (until then no row names them, so searches ignore
//     them) and deletes the replaced or removed chunks' points after it
//     (left behind by a crash, they are ignored the same way: a hit is
//     kept only when its chunk row exists). A collection missing points
//     (Qdrant lost its data, or the KB moved to another server) is
//     refilled from the vectors in the rows when a replica opens the
//     knowledge base (syncRemote), as with the files store;
//   - the in-memory BM25 index (and HNSW graph): on every replica, built
//     from the rows at open (not from snapshots: a replica's snapshot may
//     be tagged with a generation whose rows it does not all hold) and kept
//     current by refresh: every search reads the knowledge base's
//     generation (one indexed row); when it differs from what this replica
//     last synchronised, the chunk ids in the database are compared with
//     those in memory and the difference is applied. Chunk ids name their
//     content (file, hash, position, chunk text and metadata), so adding
//     what is missing and removing what is gone makes the indexes equal to
//     the rows whatever happened in between, including this replica's own
//     writes (with Qdrant only BM25 is synchronised: the ids it holds are
//     kept in base.lexIDs);
//   - uploaded originals: in the knowledge base's originals table, written
//     in the transaction of the file's chunks (an upload is all-or-nothing,
//     a re-upload replaces it, deleting the file with its content removes
//     it, dropping the schema removes them all), and read from there by
//     every replica for downloads, UpdateFiles and Recreate. One original
//     is at most kb.max_upload_bytes (below PostgreSQL's 1 GB per value).
//     Recreate empties the KB, when it must, in one transaction that also
//     starts a new epoch (meta "epoch"): a replica that sees another epoch
//     reloads every chunk rather than comparing ids, and one whose vector
//     store no longer fits (another store or dimension) takes the KB out of
//     service to reopen it. Copies that an older version left in
//     Config.Dir/NAME/content are used on that replica only when they are
//     the indexed version (readOriginal), and stored here when re-indexed;
//   - a knowledge base deleted on another replica: this replica's next
//     search of it finds its schema gone, answers ErrNotFound and takes
//     it out of service (closed with the Service).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Knowledge-base stores (Config.Store).
const (
	KBStoreFiles    = "files"    // a folder per KB with a SQLite file (the default, also "")
	KBStorePostgres = "postgres" // PostgreSQL at Config.DSN, shared by replicas
)

// pgStore is the registry of knowledge bases in PostgreSQL and what this
// replica has synchronised of each.
type pgStore struct {
	dsn    string
	prefix string // schema prefix
	reg    *sql.DB

	mu      sync.Mutex
	synced  map[string]syncState // by KB name
	retired []*base              // deleted by another replica, closed by close
}

// syncState is the generation whose rows an open base's indexes hold.
type syncState struct {
	b   *base
	gen uint64
}

const pgRegistry = `CREATE TABLE IF NOT EXISTS mixchat_kb_registry (
	name       TEXT PRIMARY KEY,
	schema     TEXT NOT NULL UNIQUE,
	created_at BIGINT NOT NULL
)`

func openPGStore(ctx context.Context, dsn string) (*pgStore, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("kb.dsn: %w", err)
	}
	reg := stdlib.OpenDB(*cfg)
	reg.SetMaxOpenConns(4)
	if _, err := reg.ExecContext(ctx, pgRegistry); err != nil {
		// Replicas starting at once may race on the catalog; the table is
		// there when another won.
		if _, err2 := reg.ExecContext(ctx, `SELECT 1 FROM mixchat_kb_registry LIMIT 1`); err2 != nil {
			reg.Close()
			return nil, fmt.Errorf("kb store: create registry: %w", err)
		}
	}
	// The knowledge bases' schemas are named after the registry's, so two
	// deployments (or tests) on one database, each with its search_path,
	// keep apart.
	var cur string
	if err := reg.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
		reg.Close()
		return nil, fmt.Errorf("kb store: %w", err)
	}
	prefix := "mixchat_kb_"
	if cur != "public" {
		prefix = cur + "_kb_"
	}
	return &pgStore{dsn: dsn, prefix: prefix, reg: reg, synced: map[string]syncState{}}, nil
}

// close closes the retired bases and the registry's connections.
func (p *pgStore) close() error {
	p.mu.Lock()
	retired := p.retired
	p.retired = nil
	p.mu.Unlock()
	var errs []error
	for _, b := range retired {
		errs = append(errs, b.close())
	}
	return errors.Join(append(errs, p.reg.Close())...)
}

func (p *pgStore) schema(name string) string { return pgSchemaName(p.prefix, name) }

// exists reports whether name is registered. A failed lookup (the
// database down or unreachable) is an error, never "not registered": an
// outage must not read as a missing knowledge base.
func (p *pgStore) exists(ctx context.Context, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var one int
	switch err := p.reg.QueryRowContext(ctx, `SELECT 1 FROM mixchat_kb_registry WHERE name = $1`, name).Scan(&one); {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	default:
		return false, fmt.Errorf("knowledge base %s: look up in the PostgreSQL registry: %w", name, err)
	}
}

func (p *pgStore) names(ctx context.Context) ([]string, error) {
	rows, err := p.reg.QueryContext(ctx, `SELECT name FROM mixchat_kb_registry ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list knowledge bases: %w", err)
	}
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// open opens a registered knowledge base's schema; dir is the replica's
// folder for it (snapshots, originals), created if missing.
func (p *pgStore) open(ctx context.Context, name, dir string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Join(dir, contentDir), 0o755); err != nil {
		return nil, fmt.Errorf("open knowledge base %s: %w", name, err)
	}
	return openPGDB(ctx, p.dsn, p.schema(name))
}

// create registers name (ErrExists when it is taken) and opens its new
// schema.
func (p *pgStore) create(ctx context.Context, name, dir string) (*sql.DB, error) {
	res, err := p.reg.ExecContext(ctx, `INSERT INTO mixchat_kb_registry (name, schema, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, p.schema(name), time.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("knowledge base %s: %w", name, ErrExists)
	}
	// A schema left by a knowledge base of that name deleted half-way goes.
	if err := dropPGSchema(ctx, p.dsn, p.schema(name)); err == nil {
		var db *sql.DB
		if db, err = p.open(ctx, name, dir); err == nil {
			return db, nil
		}
	}
	_, _ = p.reg.ExecContext(context.WithoutCancel(ctx), `DELETE FROM mixchat_kb_registry WHERE name = $1`, name)
	return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
}

// drop unregisters name and removes its schema.
func (p *pgStore) drop(ctx context.Context, name string) error {
	if _, err := p.reg.ExecContext(ctx, `DELETE FROM mixchat_kb_registry WHERE name = $1`, name); err != nil {
		return fmt.Errorf("unregister knowledge base %s: %w", name, err)
	}
	return dropPGSchema(ctx, p.dsn, p.schema(name))
}

// setSynced records that b's indexes hold the rows of generation gen.
func (p *pgStore) setSynced(b *base, gen uint64) {
	p.mu.Lock()
	p.synced[b.name] = syncState{b: b, gen: gen}
	p.mu.Unlock()
}

// isSynced reports whether b's indexes hold the rows of generation gen.
func (p *pgStore) isSynced(b *base, gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.synced[b.name]
	return ok && st.b == b && st.gen == gen
}

// openKB opens the knowledge base name from the configured store.
func (s *Service) openKB(ctx context.Context, name string) (*base, error) {
	if s.pg == nil {
		return openBase(ctx, name, s.kbDir(name), s.newStore)
	}
	db, err := s.pg.open(ctx, name, s.kbDir(name))
	if err != nil {
		return nil, err
	}
	// This replica's snapshots may be tagged with a generation whose rows
	// they do not all hold (its writes interleaved with others'): the
	// indexes are built from the rows instead. The first search then
	// checks them against the rows (refresh).
	for _, f := range []string{lexSnapshot, vecSnapshot} {
		if err := os.Remove(filepath.Join(s.kbDir(name), f)); err != nil && !os.IsNotExist(err) {
			db.Close()
			return nil, fmt.Errorf("open knowledge base %s: %w", name, err)
		}
	}
	b, err := openBaseDB(ctx, name, s.kbDir(name), db, s.newStore)
	if err != nil {
		return nil, err
	}
	b.dbOriginals = true
	return b, nil
}

// createPG registers and opens a new knowledge base in PostgreSQL; s.mu
// is held.
func (s *Service) createPG(ctx context.Context, name, vs, model, info string) (*base, error) {
	db, err := s.pg.create(ctx, name, s.kbDir(name))
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		for k, v := range map[string]string{
			"name": name, "info": info, "vector_store": vs, "embed_model": model, "dim": "0",
			"created_at": strconv.FormatInt(time.Now().UnixMilli(), 10), "lex_version": lexVersion, "generation": "0",
		} {
			if err == nil {
				err = setMeta(ctx, tx, k, v)
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	if err != nil {
		db.Close()
		_ = s.pg.drop(context.WithoutCancel(ctx), name)
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	b, err := openBaseDB(ctx, name, s.kbDir(name), db, s.newStore)
	if err != nil {
		_ = s.pg.drop(context.WithoutCancel(ctx), name)
		return nil, err
	}
	b.dbOriginals = true
	s.pg.setSynced(b, b.gen)
	s.open[name] = b
	return b, nil
}

// refresh brings b's in-memory indexes and settings up to the rows when
// another replica (or this one) changed them since the last refresh. The
// caller holds b open (acquire).
func (s *Service) refresh(ctx context.Context, b *base) error {
	p := s.pg
	if p == nil {
		return nil
	}
	cur, err := pgGeneration(ctx, b.db)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgUndefinedTable {
		// Deleted by another replica: take it out of service here too.
		s.retire(b)
		return fmt.Errorf("knowledge base %s: %w", b.name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("knowledge base %s: read generation: %w", b.name, err)
	}
	if p.isSynced(b, cur) {
		return nil
	}
	// One refresh at a time per KB, and none during a local write.
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if p.isSynced(b, cur) {
		return nil
	}
	// The generation first: rows read after it are at least as new, and a
	// change after it shows as a new generation next time.
	gen, err := pgGeneration(ctx, b.db)
	if err != nil {
		return err
	}
	info, _, err := b.readInfo(ctx)
	if err != nil {
		return err
	}
	epoch, err := getMeta(ctx, b.db, "epoch")
	if err != nil {
		return err
	}
	rebuilt := epoch != b.epoch
	if info.VectorStore == "" {
		info.VectorStore = StoreEmbedded
	}
	wrong := info.VectorStore != b.getInfo().VectorStore
	if b.mem != nil && info.Dim != 0 {
		b.mem.mu.RLock()
		wrong = wrong || (b.mem.dim != 0 && b.mem.dim != info.Dim)
		b.mem.mu.RUnlock()
	}
	if wrong {
		// Rebuilt on another replica with another vector store or
		// embedding dimension: this base's store is the wrong kind. The
		// next operation opens the KB afresh.
		s.retire(b)
		return fmt.Errorf("knowledge base %s was rebuilt with another vector store or embedding model on another replica: reopened, try again", b.name)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT id FROM chunks`)
	if err != nil {
		return err
	}
	inDB := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		inDB[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// What this replica holds: the embedded index's chunks, or with
	// Qdrant (whose collection the writing replica keeps current, and
	// which every replica searches) the BM25 index's.
	// After a rebuild (a new epoch) a chunk of the same id may hold other
	// vectors (another embedding model): everything is reloaded.
	var gone []string
	var missing []string
	if b.mem != nil {
		b.mem.mu.RLock()
		for id := range b.mem.pay {
			if rebuilt || !inDB[id] {
				gone = append(gone, id)
			}
		}
		for id := range inDB {
			if _, ok := b.mem.pay[id]; rebuilt || !ok {
				missing = append(missing, id)
			}
		}
		b.mem.mu.RUnlock()
	} else {
		for id := range b.lexIDs {
			if rebuilt || !inDB[id] {
				gone = append(gone, id)
			}
		}
		for id := range inDB {
			if _, ok := b.lexIDs[id]; rebuilt || !ok {
				missing = append(missing, id)
			}
		}
	}
	for _, id := range gone {
		b.lexRemove(id)
	}
	if len(gone) > 0 && b.mem != nil {
		if err := b.mem.Delete(ctx, Filter{IDs: gone}); err != nil {
			return err
		}
	}
	for start := 0; start < len(missing); start += 500 {
		if err := b.addChunks(ctx, missing[start:min(start+500, len(missing))]); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.info.Info, b.info.Dim, b.info.EmbedModel = info.Info, info.Dim, info.EmbedModel
	b.mu.Unlock()
	b.gen = gen
	b.epoch = epoch
	p.setSynced(b, gen)
	return nil
}

// retire takes b out of service on this replica (deleted or rebuilt on
// another): the next operation on its name opens it afresh. It is closed
// with the Service, since closing waits for the running operations, the
// caller's included.
func (s *Service) retire(b *base) {
	s.mu.Lock()
	if s.open[b.name] == b {
		delete(s.open, b.name)
		s.pg.mu.Lock()
		s.pg.retired = append(s.pg.retired, b)
		s.pg.mu.Unlock()
	}
	s.mu.Unlock()
}

// addChunks loads the chunks with these ids into the in-memory indexes:
// BM25, and the embedded vector index when the KB has one (Qdrant's
// points were written by the replica that ingested them).
func (b *base) addChunks(ctx context.Context, ids []string) error {
	args := make([]any, len(ids))
	vec := "vector"
	if b.mem == nil {
		vec = "NULL"
	}
	q := `SELECT id, file, seq, text, metadata, terms, ` + vec + ` FROM chunks WHERE id IN (`
	for i, id := range ids {
		args[i] = id
		if i > 0 {
			q += ","
		}
		q += "?"
	}
	rows, err := b.db.QueryContext(ctx, q+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var batch []Chunk
	for rows.Next() {
		c, err := scanChunk(rows, true)
		if err != nil {
			return err
		}
		b.lexAdd(c.ID, c.Terms)
		if b.mem != nil && len(c.Vector) > 0 {
			batch = append(batch, c.Chunk)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) == 0 || b.mem == nil {
		return nil
	}
	return b.mem.Upsert(ctx, batch)
}

// pgUndefinedTable is PostgreSQL's error code for a missing table.
const pgUndefinedTable = "42P01"

// pgGeneration reads a knowledge base's change counter.
func pgGeneration(ctx context.Context, db *sql.DB) (uint64, error) {
	v, err := getMeta(ctx, db, "generation")
	if err != nil {
		return 0, err
	}
	if v == "" {
		return 0, nil
	}
	g, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errors.New("generation " + strconv.Quote(v) + " is not a number")
	}
	return g, nil
}
