import { Migration } from '@mikro-orm/migrations';

export class Migration0001Accounts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table users (
        id uuid primary key,
        email varchar(320) not null,
        password_hash text not null,
        display_name varchar(255) null,
        role varchar(32) not null,
        preferences jsonb not null default '{}'::jsonb,
        chat_openai_key_sealed text null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);
    this.addSql(`create unique index users_email_unique on users (lower(email))`);

    this.addSql(`
      create table sessions (
        id uuid primary key,
        token_hash varchar(64) not null unique,
        user_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null,
        expires_at timestamptz not null
      )`);
    this.addSql(`create index sessions_user_id_index on sessions (user_id)`);

    this.addSql(`
      create table api_keys (
        id uuid primary key,
        name varchar(255) not null,
        prefix varchar(12) not null,
        key_hash varchar(64) not null unique,
        scopes jsonb not null,
        collection varchar(64) null,
        active boolean not null default true,
        expires_at timestamptz null,
        last_used_at timestamptz null,
        created_by uuid null references users (id) on delete set null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);

    this.addSql(`
      create table audit_events (
        id uuid primary key,
        actor_id uuid null,
        actor_type varchar(32) not null,
        action varchar(128) not null,
        resource_type varchar(64) not null,
        resource_id varchar(255) null,
        details jsonb not null default '{}'::jsonb,
        created_at timestamptz not null
      )`);
    this.addSql(`create index audit_events_created_at_index on audit_events (created_at desc)`);

    this.addSql(`
      create table idempotency_records (
        id uuid primary key,
        owner varchar(128) not null,
        key varchar(255) not null,
        method varchar(16) not null,
        path text not null,
        request_hash varchar(64) not null,
        response_status integer null,
        response_body text null,
        response_content_type varchar(255) null,
        created_at timestamptz not null,
        unique (owner, key)
      )`);
    this.addSql(`create index idempotency_records_created_at_index on idempotency_records (created_at)`);

    this.addSql(`
      create table settings (
        key varchar(128) primary key,
        value jsonb not null,
        updated_at timestamptz not null
      )`);
  }
}
