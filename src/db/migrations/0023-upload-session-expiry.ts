import { Migration } from '@mikro-orm/migrations';

/**
 * Open upload sessions left idle past `UPLOAD_SESSION_EXPIRY_HOURS` are cancelled and their files
 * removed (upload-session-expiry.ts); `expired` tells such a session from one its client cancelled.
 * The partial index finds the open sessions by their last activity.
 */
export class Migration0023UploadSessionExpiry extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table upload_sessions add column expired boolean not null default false');
    this.addSql("create index upload_sessions_open_index on upload_sessions (updated_at) where status = 'open'");
  }
}
