/**
 * What the log says while ingestion waits for disk space (the log only; the waits themselves are
 * tested through the API in test/storage/disk-space): one warn and one info line however often
 * ingestion flips near the margin, and a wait that holds is still reported.
 */
import t from 'tap';
import { DiskSpaceWaitLog } from '../../src/ingestion/disk-space-wait-log.js';
import { createLogger } from '../../src/logger.js';
import { logLines } from '../support/log-lines.js';

const SECOND = 1000;

function waitLog() {
  const { lines, stream } = logLines();
  let now = 1_000_000;
  const log = new DiskSpaceWaitLog(createLogger('info', stream), () => now);
  const said = () => lines.map((line) => line.msg);
  return { log, said, advance: (ms: number) => { now += ms; } };
}

t.test('ingestion flipping between waiting and going on is said once each way', async (t) => {
  const { log, said, advance } = waitLog();
  t.equal(log.waiting('The disk is short'), true, 'a wait begins');
  t.equal(log.waiting('The disk is short'), false, 'the same wait goes on');
  for (let flip = 0; flip < 5; flip++) {
    advance(2 * SECOND);
    log.ended();
    advance(SECOND);
    t.equal(log.waiting('The disk is short'), true, 'each wait begins, so the queued documents are told');
  }
  log.ended();
  t.same(said(), ['The disk is short: ingestion waits until space is freed', 'there is disk space again: ingestion goes on']);
});

t.test('a wait that begins soon after another is said once it has lasted a minute; one after a quiet minute at once', async (t) => {
  const { log, said, advance } = waitLog();
  log.waiting('First shortage');
  log.ended();
  advance(5 * SECOND);
  log.waiting('Second shortage');
  advance(59 * SECOND);
  log.waiting('Second shortage');
  t.equal(said().length, 2, 'not yet said: it may be one more flip');
  advance(SECOND);
  log.waiting('Second shortage');
  t.equal(said()[2], 'Second shortage: ingestion waits until space is freed', 'a wait that holds is reported');
  log.ended();
  t.equal(said()[3], 'there is disk space again: ingestion goes on', 'and its end, since its start was said');
  advance(61 * SECOND);
  log.waiting('Third shortage');
  t.equal(said()[4], 'Third shortage: ingestion waits until space is freed', 'after a quiet minute a wait is said at once');
});
