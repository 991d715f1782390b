package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/countersign/countersign/db"
)

var errChainBroken = errors.New("the audit chain is broken")

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usageLine := "countersign audit verify [--public-key FILE]   (reads COUNTERSIGN_DATABASE_URL)\n       countersign audit keygen --out FILE"
	if len(args) == 0 || (args[0] != "verify" && args[0] != "keygen") {
		fmt.Fprintln(stderr, "Usage: "+usageLine)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errUsage
	}
	if args[0] == "keygen" {
		return runAuditKeygen(args[1:], stdout, stderr)
	}
	fs := newFlags("audit verify", usageLine, stderr, false)
	pubPath := fs.String("public-key", "", "also check the chain against every signed checkpoint, with this public key (from audit keygen)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	store, err := openCommandDB(ctx, "audit verify")
	if err != nil {
		return err
	}
	defer store.Close()
	var r db.ChainReport
	if *pubPath != "" {
		pub, err := db.LoadPublicKey(*pubPath)
		if err != nil {
			return err
		}
		r, err = store.VerifyAuditSigned(ctx, pub)
		if err != nil {
			return err
		}
		if r.Intact && r.Checkpoints == 0 {
			fmt.Fprintln(stderr, "warning: no signed checkpoints are stored; only the hash chain was checked")
		}
	} else if r, err = store.VerifyAudit(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, r.String())
	// Passkey step-up (issue 33): every stored assertion is checked again.
	receipts, err := store.VerifyReceipts(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, receipts.String())
	if !r.Intact {
		return errChainBroken
	}
	if !receipts.OK() {
		return errReceiptsFail
	}
	return nil
}

var errReceiptsFail = errors.New("a passkey receipt does not verify")

// runAuditKeygen writes a new checkpoint signing key and its public key.
func runAuditKeygen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit keygen", "countersign audit keygen --out FILE", stderr, false)
	out := fs.String("out", "", "where to write the private key (the public key goes to FILE.pub)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	pub, err := db.GenerateSigningKey(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Wrote the signing key to %s and its public key to %s.pub (key id %s).\n", *out, *out, db.KeyID(pub))
	fmt.Fprintln(stdout, "Give every instance COUNTERSIGN_AUDIT_SIGNING_KEY="+*out+"; keep the .pub file where the database's administrators cannot change it.")
	return nil
}
