// Package deploy holds mixchat's deployment files: the container image
// (Dockerfile), a Compose project (compose/) and Kubernetes manifests
// (kubernetes/). It has no code; its tests check the files offline with the
// tools' own parsers: the Kubernetes API types, the Compose specification
// loader and BuildKit's Dockerfile parser. docs/deploy.md walks through them.
package deploy
