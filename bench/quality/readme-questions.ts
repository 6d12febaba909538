/**
 * A retrieval check shaped like the user probe that found the local reranker making rankings
 * worse (600 README files, questions whose right package is known): the README of every package
 * installed at the top of node_modules, and questions a developer would ask, each with the
 * package(s) that answer it. Where two installed packages do the same job, both count as right.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';

export interface ReadmeFile {
  packageName: string;
  file: string;
}

export interface PackageQuestion {
  question: string;
  answers: string[];
}

export const PACKAGE_QUESTIONS: PackageQuestion[] = [
  { question: 'check whether a version satisfies a semver range', answers: ['semver'] },
  { question: 'generate a short random unique id for URLs', answers: ['nanoid'] },
  { question: 'load environment variables from a .env file', answers: ['dotenv'] },
  { question: 'convert a duration like 2 days into milliseconds', answers: ['ms', 'timestring'] },
  { question: 'delete a folder and everything in it like rm -rf', answers: ['rimraf'] },
  { question: 'escape special characters in a string before using it in a regular expression', answers: ['escape-string-regexp'] },
  { question: 'remove ANSI colour codes from terminal output text', answers: ['strip-ansi'] },
  { question: 'how many columns a string takes when printed in a terminal, counting wide characters', answers: ['string-width'] },
  { question: 'run async functions with a maximum number running at the same time', answers: ['p-limit', 'p-map'] },
  { question: 'parse the Cookie request header into an object', answers: ['cookie', '@fastify/cookie'] },
  { question: 'find a file by walking up parent directories', answers: ['find-up', 'walk-up-path'] },
  { question: 'format a number of bytes as a human readable size like 1.34 kB', answers: ['pretty-bytes'] },
  { question: 'compute the differences between two texts line by line', answers: ['diff'] },
  { question: 'WebSocket server for Node.js', answers: ['ws'] },
  { question: 'parse a PostgreSQL connection URL into host, port, user and database', answers: ['pg-connection-string'] },
  { question: 'read the PostgreSQL password from the .pgpass file', answers: ['pgpass'] },
  { question: 'detect the type of a file from its magic number bytes', answers: ['file-type'] },
  { question: 'look up the MIME content type for a file extension', answers: ['mime-types', 'mime-db'] },
  { question: 'escape a string so it is safe to insert into HTML', answers: ['escape-html', 'he', 'html-escaper'] },
  { question: 'convert text between character encodings such as win1251 and utf8', answers: ['iconv-lite'] },
  { question: 'create an RFC 4122 UUID', answers: ['uuid'] },
  { question: 'encode a byte array to base64 and decode it back', answers: ['base64-js'] },
  { question: 'spawn a child process that works on Windows with shebangs', answers: ['cross-spawn'] },
  { question: 'set an environment variable in an npm script on both Windows and Unix', answers: ['cross-env'] },
  { question: 'find where an executable is in the PATH', answers: ['which', '@isaacs/which'] },
  { question: 'retry a failing function with exponentially increasing delays', answers: ['exponential-backoff', '@gar/promise-retry'] },
  { question: 'convert Markdown to HTML', answers: ['marked'] },
  { question: 'syntax highlighting for code blocks', answers: ['prismjs', 'prismjs-terminal'] },
  { question: 'a cache that evicts the least recently used items', answers: ['lru-cache', 'toad-cache'] },
  { question: 'read a CSV file into arrays or objects', answers: ['csv-parse'] },
  { question: 'create and modify PDF documents', answers: ['pdf-lib'] },
  { question: 'convert a Word .docx document to HTML', answers: ['mammoth'] },
  { question: 'convert an internationalized domain name to punycode ASCII', answers: ['punycode'] },
  { question: 'parse XML into a JavaScript object', answers: ['fast-xml-parser'] },
  { question: 'hash passwords with Argon2', answers: ['argon2'] },
  { question: 'check whether an IP address is inside a CIDR range', answers: ['ipaddr.js', 'ip-address'] },
  { question: 'Porter stemming of English words', answers: ['stemmer'] },
  { question: 'SQL query builder for PostgreSQL, MySQL and SQLite', answers: ['knex'] },
  { question: 'show a progress bar in the terminal', answers: ['progress'] },
  { question: 'HTTP load testing and benchmarking tool', answers: ['autocannon'] },
];

const README_NAME = /^readme(\.md|\.markdown)?$/i;

/** The README of every package directly under `nodeModules` (scoped ones included), sorted by package name. */
export async function findReadmeFiles(nodeModules: string): Promise<ReadmeFile[]> {
  const packages: string[] = [];
  for (const entry of await readdir(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (!entry.name.startsWith('@')) {
      packages.push(entry.name);
      continue;
    }
    for (const scoped of await readdir(path.join(nodeModules, entry.name), { withFileTypes: true })) {
      if (scoped.isDirectory()) packages.push(`${entry.name}/${scoped.name}`);
    }
  }
  const files: ReadmeFile[] = [];
  for (const packageName of packages.sort()) {
    const readme = (await readdir(path.join(nodeModules, packageName))).filter((name) => README_NAME.test(name)).sort()[0];
    if (readme) files.push({ packageName, file: path.join(nodeModules, packageName, readme) });
  }
  return files;
}

/** 1-based rank of the first right package among the distinct packages of a ranking, or undefined. */
export function answerRank(rankedPackages: readonly string[], answers: readonly string[]): number | undefined {
  const distinct = [...new Set(rankedPackages)];
  const index = distinct.findIndex((name) => answers.includes(name));
  return index < 0 ? undefined : index + 1;
}
