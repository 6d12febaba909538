/**
 * A truncate removes the stored files of what it deletes (documents' originals, open upload
 * sessions' files) and no other file under the collection: an upload racing the truncate stores its
 * file before its document exists, and that document outlives the truncate. Removing the whole
 * prefix took such files from their documents, which then failed ("the original file is missing").
 * The same holds for the files of a session being completed, which become its documents' files.
 * Documents' pictures go by one listing of the collection's pictures (FileStore.removeMany), and
 * only those of the documents deleted.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { adminTestApp, createTestCollection, multipartUpload, testBackends, waitForIngestion } from '../support/test-app.js';

// Originals up to 64 KB stay in the database (ORIGINALS_IN_DATABASE_MAX_BYTES): these go to files.
const largeText = (topic: string) => `${topic} notes. `.repeat(6000);

for (const backend of testBackends()) {
  t.test(`${backend}: a truncate removes its documents' and sessions' files, not a racing upload's`, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const collection = await createTestCollection(app, admin, { name: 'stored' });
    const directory = path.join(services.config.dataDir, 'files', collection.id);
    const storedFiles = () => (existsSync(directory) ? readdirSync(directory).sort() : []);

    const upload = multipartUpload([{ filename: 'harbour.txt', content: largeText('harbour'), contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/stored/documents', headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);
    await waitForIngestion(app, 'stored', admin);
    const session = (await app.inject({ method: 'POST', url: '/v1/collections/stored/uploads', headers: admin })).json() as { id: string };
    const sessionFile = multipartUpload([{ filename: 'glacier.txt', content: largeText('glacier'), contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'PUT', url: `/v1/collections/stored/uploads/${session.id}/files`, headers: { ...admin, ...sessionFile.headers }, payload: sessionFile.payload })).statusCode, 200);
    // A session a completion has claimed hands its files to the documents it is creating: documents
    // created after the truncate's deletion outlive it, so its files are theirs to keep.
    const claimed = (await app.inject({ method: 'POST', url: '/v1/collections/stored/uploads', headers: admin })).json() as { id: string };
    const claimedFile = multipartUpload([{ filename: 'orchard.txt', content: largeText('orchard'), contentType: 'text/plain' }]);
    t.equal((await app.inject({ method: 'PUT', url: `/v1/collections/stored/uploads/${claimed.id}/files`, headers: { ...admin, ...claimedFile.headers }, payload: claimedFile.payload })).statusCode, 200);
    await services.sql("update upload_sessions set status = 'completing' where id = ?", [claimed.id]);
    const [{ storage_key: claimedKey }] = await services.sql<{ storage_key: string }>('select storage_key from upload_session_files where session_id = ?', [claimed.id]) as [{ storage_key: string }];
    t.equal(storedFiles().length, 3, 'the document\'s original and both sessions\' files are stored');
    // What an upload that has stored its file, and not yet made its document, leaves in the store.
    await services.files.write(`${collection.id}/racing-upload`, Buffer.from('a file whose document is being created'));

    const truncated = await app.inject({ method: 'POST', url: '/v1/collections/stored/truncate', headers: admin });
    t.equal(truncated.statusCode, 200, truncated.body);
    t.same(truncated.json(), { deleted_documents: 1 });
    t.same(storedFiles(), [path.basename(claimedKey), 'racing-upload'].sort(), 'the deleted document\'s and open session\'s files are gone; the racing upload\'s and the claimed session\'s are kept');
    t.equal((await app.inject({ url: `/v1/collections/stored/uploads/${session.id}`, headers: admin })).statusCode, 404, 'the session is gone');
  });

  t.test(`${backend}: a truncate of 40 documents removes their pictures and no other document's`, async (t) => {
    const { app, admin, services } = await adminTestApp(t, backend);
    const collection = await createTestCollection(app, admin, { name: 'pictured' });
    const upload = multipartUpload(Array.from({ length: 40 }, (_, index) => ({ filename: `note-${index}.txt`, content: `Harbour note ${index} about tides.`, contentType: 'text/plain' })));
    t.equal((await app.inject({ method: 'POST', url: '/v1/collections/pictured/documents/batch', headers: { ...admin, ...upload.headers }, payload: upload.payload })).statusCode, 202);
    const documents = await waitForIngestion(app, 'pictured', admin);
    t.equal(documents.length, 40);
    // What ingestion of a multimodal collection leaves (element-files.ts): pictures under each document's prefix.
    const pictured = documents.filter((_, index) => index % 3 === 0).map((document) => `${collection.id}/elements/${document.id}/0`);
    for (const key of pictured) await services.files.write(key, Buffer.from('png'));
    // A document being created while the truncate runs (its id unknown to the truncate) keeps its picture.
    const racing = `${collection.id}/elements/${randomUUID()}/0`;
    await services.files.write(racing, Buffer.from('png'));

    const truncated = await app.inject({ method: 'POST', url: '/v1/collections/pictured/truncate', headers: admin });
    t.equal(truncated.statusCode, 200, truncated.body);
    t.same(truncated.json(), { deleted_documents: 40 });
    const left = readdirSync(path.join(services.config.dataDir, 'files', collection.id, 'elements'));
    t.same(left, [racing.split('/')[2]], `the ${pictured.length} deleted documents' pictures are gone, the racing document's is kept`);
  });
}
