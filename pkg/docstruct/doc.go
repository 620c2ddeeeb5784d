// Package docstruct reads the structure of documents and of the questions
// that address their parts: a document's title and aliases and its tree of
// parts (headings at every level, labelled paragraphs and list items, each
// with its label, its full path and the byte range of its text), and in a
// question the document and the part it names ("劳动法第三十六条", "《论语》1.3",
// "Article I, Section 8", "the Fourteenth Amendment"), resolved down the
// tree to the part, or to an Absent that says what the document has
// instead.
//
// Numbers are read in every common notation: Arabic digits (also
// full-width), Chinese numerals (十六, 一百零八, 廿一, 叁拾陆), Roman numerals
// (strict, and only in a label: the word "I" is no number) and English
// number words, cardinal and ordinal ("thirty-six", "twenty-first", "14th").
// Kinds of parts are recognised by their pattern — 第N and one CJK
// classifier, a name and a classifier before 第N ("学而篇第一"), a
// capitalised English kind word before a number, an ordinal before a kind —
// not by a list of one domain's words. What one domain adds (named
// positions, classifiers, a persona, example questions) is a Profile,
// loaded from data (docs/structure.md describes the format).
package docstruct
