// Package deploy holds what runs pmlin on machines other than one's own:
// a Dockerfile and a Kubernetes Indexed Job that runs the shards of one
// fuzz campaign (pmlin fuzz --shard I/N), described in its README.md. It
// has no code: its test checks that the manifests parse, that the Job's
// command line is one pmlin accepts, and the properties the README
// promises (image pulls, the CPU limit --jobs follows, no root, deadlines,
// the build context, the edit for clusters without ReadWriteMany
// storage).
package deploy
