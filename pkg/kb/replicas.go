package kb

// Knowledge bases in a SharedCatalog (PostgreSQL, Config.Store
// "postgres"), for several replicas serving the same knowledge bases. What
// lives where:
//
//   - the list of knowledge bases: the table mixchat_kb_registry in the
//     DSN's schema (name → schema); the knowledge bases' schemas are
//     mixchat_kb_HASH (SCHEMA_kb_HASH when the DSN's search_path selects a
//     schema other than public);
//   - each knowledge base's documents, chunks (text, metadata, BM25 term
//     frequencies, vectors) and settings: a schema of its own, with the
//     tables of the SQLite file (pkg/store/postgres makes them), written
//     in the same transactions as with SQLite, each under the knowledge
//     base's advisory lock;
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
	"strconv"
	"sync"
)

// syncState is the generation whose rows an open base's indexes hold.
type syncState struct {
	b   *base
	gen uint64
}

// replicas is what this replica holds of the knowledge bases of a shared
// catalog, and the bases taken out of service because another replica
// deleted or rebuilt them.
type replicas struct {
	mu      sync.Mutex
	synced  map[string]syncState // by KB name
	retired []*base              // closed by closeRetired (Service.Close)
}

// setSynced records that b's indexes hold the rows of generation gen.
func (r *replicas) setSynced(b *base, gen uint64) {
	r.mu.Lock()
	r.synced[b.name] = syncState{b: b, gen: gen}
	r.mu.Unlock()
}

// isSynced reports whether b's indexes hold the rows of generation gen.
func (r *replicas) isSynced(b *base, gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.synced[b.name]
	return ok && st.b == b && st.gen == gen
}

// addRetired keeps b, taken out of service, to be closed later.
func (r *replicas) addRetired(b *base) {
	r.mu.Lock()
	r.retired = append(r.retired, b)
	r.mu.Unlock()
}

// closeRetired closes the bases taken out of service.
func (r *replicas) closeRetired() error {
	r.mu.Lock()
	retired := r.retired
	r.retired = nil
	r.mu.Unlock()
	var errs []error
	for _, b := range retired {
		errs = append(errs, b.close())
	}
	return errors.Join(errs...)
}

// refresh brings b's in-memory indexes and settings up to the rows when
// another replica (or this one) changed them since the last refresh. The
// caller holds b open (acquire).
func (s *Service) refresh(ctx context.Context, b *base) error {
	if s.shared == nil {
		return nil
	}
	cur, err := readGeneration(ctx, b.db)
	if err != nil && s.shared.Gone(err) {
		// Deleted by another replica: take it out of service here too.
		s.retire(b)
		return fmt.Errorf("knowledge base %s: %w", b.name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("knowledge base %s: read generation: %w", b.name, err)
	}
	if s.replicas.isSynced(b, cur) {
		return nil
	}
	// One refresh at a time per KB, and none during a local write.
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if s.replicas.isSynced(b, cur) {
		return nil
	}
	// The generation first: rows read after it are at least as new, and a
	// change after it shows as a new generation next time.
	gen, err := readGeneration(ctx, b.db)
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
	ids, err := allChunkIDs(ctx, b.db)
	if err != nil {
		return err
	}
	inDB := make(map[string]bool, len(ids))
	for _, id := range ids {
		inDB[id] = true
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
	b.lexRemove(gone...)
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
	b.info.Info, b.info.Dim, b.info.EmbedModel, b.info.Profile = info.Info, info.Dim, info.EmbedModel, info.Profile
	b.mu.Unlock()
	b.prof.Store(s.profiles[info.Profile])
	b.gen = gen
	b.epoch = epoch
	b.structs.invalidate() // the files may have changed too
	s.replicas.setSynced(b, gen)
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
		s.replicas.addRetired(b)
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
	var batch []Chunk
	err := eachChunk(ctx, b.db, q+`)`, args, func(c storedChunk) error {
		b.lexAdd(c.ID, b.termsOf(c))
		if b.mem != nil && len(c.Vector) > 0 {
			batch = append(batch, c.Chunk)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(batch) == 0 || b.mem == nil {
		return nil
	}
	return b.mem.Upsert(ctx, batch)
}

// readGeneration reads a knowledge base's change counter.
func readGeneration(ctx context.Context, db *sql.DB) (uint64, error) {
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
