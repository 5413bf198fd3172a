-- The table of the JDBC storage plugin (JDBCStorageService), made when the postgres volume is new.
CREATE TABLE storagerecords (
  context VARCHAR(255) NOT NULL,
  id VARCHAR(255) NOT NULL,
  expires BIGINT DEFAULT NULL,
  value TEXT NOT NULL,
  version BIGINT NOT NULL,
  PRIMARY KEY (context, id)
);
CREATE INDEX storagerecords_expires ON storagerecords (expires);
