package kb

// bm25Query is the plain BM25 query of q — its body terms with the title
// terms added twice — for tests that compare two replicas' BM25 indexes
// term for term (searches rank with lexicalQuery).
func bm25Query(q string) []string {
	q = stripQuestion(q)
	all := lexTerms(q)
	tt := titleTerms(q)
	all = append(all, tt...)
	return append(all, tt...)
}
