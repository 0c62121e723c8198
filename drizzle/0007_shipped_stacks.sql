-- The stacks shipped with Tollgate (stacks/) are global and belong to no user.
ALTER TABLE "stacks" ALTER COLUMN "owner_id" DROP NOT NULL;