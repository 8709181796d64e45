package record

import (
	"fmt"
	"unsafe"

	"github.com/pmlin/pmlin/model"
)

// What a worker logs, one call per record. An operation's invocation
// reserves room for both of its records (the response's may take up to
// its share of OpWords(k) or ObjectOpWords), so a response never starts a
// chunk of its own; a fixed (shared) log must have that room, which the
// worker checks first (Room). Each call stores its payload word by word
// (see Log.record) and is small enough for the worker's loop to keep the
// cost of a call and no more.

// OpWords bounds the words of one operation's records with k words (its
// invocation and its response): the room a worker checks (Room) before a
// multi-word operation.
func OpWords(k int) int { return opWords(k) }

// ObjectOpWords is OpWords for an object workload's operations (InvokeOp).
const ObjectOpWords = objOpWords

// Room reports whether the log has room for one more operation whose
// records take n words (OpWords, ObjectOpWords): a log in memory always
// has, a shared one only up to its fixed size.
func (l *Log) Room(n int) bool { return l.room(n) }

// InvokeRead logs the invocation at ts of a read of addrs, k of them.
func (l *Log) InvokeRead(k int, ts int64, addrs []uint64) {
	l.reserve(opWords(k))
	addrs = payload(addrs, k)
	l.mark(ts)
	q := unsafe.Add(l.record(recInvRead, k, ts), 8*recHeader)
	for _, a := range addrs {
		recPut(q, 0, a)
		q = unsafe.Add(q, 8)
	}
	l.invTS = uint64(ts)
	l.commitRecord(recInvRead, recHeader+k, ts)
}

// InvokeSwap logs the invocation at ts of a swap of addrs, k of them, to
// the values nw.
func (l *Log) InvokeSwap(k int, ts int64, addrs, nw []uint64) {
	l.reserve(opWords(k))
	addrs = payload(addrs, k)
	l.mark(ts)
	q := unsafe.Add(l.record(recInvSwap, k, ts), 8*recHeader)
	nw = nw[:len(addrs)]
	for i, a := range addrs {
		recPut(q, 0, a)
		recPut(q, 1, nw[i])
		q = unsafe.Add(q, 16)
	}
	l.invTS = uint64(ts)
	l.commitRecord(recInvSwap, recHeader+2*k, ts)
}

// InvokeCAS logs the invocation at ts of a cas of addrs, k of them, from
// the values exp to nw.
func (l *Log) InvokeCAS(k int, ts int64, addrs, exp, nw []uint64) {
	l.reserve(opWords(k))
	addrs = payload(addrs, k)
	l.mark(ts)
	q := unsafe.Add(l.record(recInvCAS, k, ts), 8*recHeader)
	exp, nw = exp[:len(addrs)], nw[:len(addrs)]
	for i, a := range addrs {
		recPut(q, 0, a)
		recPut(q, 1, exp[i])
		recPut(q, 2, nw[i])
		q = unsafe.Add(q, 24)
	}
	l.invTS = uint64(ts)
	l.commitRecord(recInvCAS, recHeader+3*k, ts)
}

// ReturnValues logs at ts the response of a read, or of a swap, of k
// words: the values read, or those the swap replaced.
func (l *Log) ReturnValues(k int, ts int64, vals []uint64) {
	q := unsafe.Add(l.record(recRetRead, k, ts), 8*recHeader)
	for _, v := range payload(vals, k) {
		recPut(q, 0, v)
		q = unsafe.Add(q, 8)
	}
	l.commitRecord(recRetRead, recHeader+k, ts)
}

// ReturnOK logs at ts the response of a cas of k words that succeeded.
func (l *Log) ReturnOK(k int, ts int64) {
	l.record(recRetOK, k, ts)
	l.commitRecord(recRetOK, recHeader, ts)
}

// ReturnFail logs at ts the response of a cas of k words that failed,
// blaming the word at addr.
func (l *Log) ReturnFail(k int, ts int64, addr uint64) {
	recPut(l.record(recRetFail, k, ts), recHeader, addr)
	l.commitRecord(recRetFail, recHeader+1, ts)
}

// ReturnFailValues is ReturnFail with the values the cas read, k of them.
func (l *Log) ReturnFailValues(k int, ts int64, addr uint64, vals []uint64) {
	q := unsafe.Add(l.record(recRetFailValues, k, ts), 8*recHeader)
	recPut(q, 0, addr)
	for _, v := range payload(vals, k) {
		q = unsafe.Add(q, 8)
		recPut(q, 0, v)
	}
	l.commitRecord(recRetFailValues, recHeader+1+k, ts)
}

// InvokeOp logs the invocation at ts of operation op (its index in the
// recorded Object's operations) with args, at most MaxArgs of them.
func (l *Log) InvokeOp(ts int64, op int, args []model.Value) {
	l.reserve(objOpWords)
	args = objPayload(args, MaxArgs)
	l.mark(ts)
	q := l.record(recInvOp, len(args), ts)
	recPut(q, recHeader, uint64(op))
	for i, a := range args {
		recPut(q, recHeader+1+2*i, uint64(a.Sym))
		recPut(q, recHeader+2+2*i, a.N)
	}
	l.invTS = uint64(ts)
	l.commitRecord(recInvOp, recHeader+1+2*len(args), ts)
}

// ReturnOp logs at ts the response of an object's operation with res,
// which CheckResults passed.
func (l *Log) ReturnOp(ts int64, res []model.Value) {
	res = objPayload(res, MaxResults)
	q := l.record(recRetOp, len(res), ts)
	for i, v := range res {
		recPut(q, recHeader+2*i, uint64(v.Sym))
		recPut(q, recHeader+1+2*i, v.N)
	}
	l.commitRecord(recRetOp, recHeader+2*len(res), ts)
}

// Count counts a record of kind (wire.RecInvRead, InvOp, ...) that an
// unrecorded worker does not log, for the segment's statistics
// (MergeStats): the driver runs workloads unrecorded as the baseline of
// the recording's cost.
func (l *Log) Count(kind int) {
	l.counts[kind]++
	l.lastKind = kind
}

// Tag notes the largest tag counter of the log's process so far
// (MergeStats.MaxTag), a new value's (process id + 1) << 32 | counter.
func (l *Log) Tag(counter uint64) { l.tag = counter }

// objPayload checks that an object record's values fit its record (the
// workload draws at most MaxArgs arguments; CheckResults passed the
// results).
func objPayload(vs []model.Value, most int) []model.Value {
	if len(vs) > most {
		panic(fmt.Sprintf("driver: %d values in an object record, at most %d", len(vs), most))
	}
	return vs
}

// LastStamp is the timestamp of the log's last record in the segment.
func (l *Log) LastStamp() uint64 { return l.lastTS }
